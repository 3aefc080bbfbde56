/**
 * Start-up against a NATS node that is not ready: a service started on a cluster node
 * whose JetStream has no meta leader yet (two of three nodes started late), or against a node that
 * is not listening yet, waits and retries with backoff — logged, its /healthz not answering 200
 * meanwhile — instead of exiting, and works once the cluster forms. The wait is bounded, and an
 * authentication failure is not waited out. Real nats-server processes of the test's own.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { connectBus, isTransientStartupError, type BusLog } from '@mcpx/bus';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { available, PrivateNats } from './support/infra.js';
import { Stack, until, waitHealthy } from './support/stack.js';

const RETRY_LINE = 'NATS not ready at start-up, retrying';

/** A BusLog that keeps what it is told. */
function recordingLog(): BusLog & { lines: Array<{ msg: string; fields: Record<string, unknown> }> } {
  const lines: Array<{ msg: string; fields: Record<string, unknown> }> = [];
  return {
    lines,
    error: (msg, fields = {}) => void lines.push({ msg, fields }),
    warn: (msg, fields = {}) => void lines.push({ msg, fields }),
  };
}

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
});

describe.skipIf(!available().nats)('start-up against a NATS node that is not ready', () => {
  it('a registry and a projector on a cluster node without a meta leader wait (not ready, alive, logged), then work once the cluster forms', async () => {
    const nodes = await PrivateNats.cluster(3, { start: 1 });
    cleanup.push(() => Promise.all(nodes.map((n) => n.destroy())));
    const stack = await Stack.start({ nats: nodes[0]!.url, registries: 0, projectors: 0, proxies: 0 });
    cleanup.push(() => stack.stop());
    const services = await Promise.all([
      stack.spawn('registry', {}, { waitHealthy: false }),
      stack.spawn('projector', {}, { waitHealthy: false }),
    ]);
    for (const svc of services) {
      await until(
        async () => (svc.logs.join('').includes(RETRY_LINE) ? true : undefined),
        60_000,
        `${svc.instance} to wait for JetStream`,
      );
      expect(svc.alive()).toBe(true);
      const health = await fetch(`${svc.url}/healthz`)
        .then((r) => r.status)
        .catch(() => 'refused');
      expect(health).not.toBe(200);
    }
    const line = services[0].logs
      .join('')
      .split('\n')
      .find((l) => l.includes(RETRY_LINE))!;
    expect(JSON.parse(line)).toEqual(
      expect.objectContaining({
        level: 'warn',
        step: 'jetstream',
        attempt: expect.any(Number),
        retryInMs: expect.any(Number),
      }),
    );

    await Promise.all([nodes[1]!.start(), nodes[2]!.start()]);
    await Promise.all(services.map((svc) => waitHealthy(svc)));
    // And the stack works through the cluster: a server registered, its tools projected onto an agent.
    const upstream: TestMcpServer = await startTestMcpServer({ era: 'modern', tools: [echoTool()] });
    cleanup.push(() => upstream.close());
    await stack.setServer('up', upstream.url);
    await stack.createAgent('late', ['up'], 1);
    for (const svc of services) expect(svc.alive()).toBe(true);
  }, 180_000);

  it('connectBus waits for a node that is not listening yet, and gives up past its bound on one whose JetStream never gets ready', async () => {
    // Not listening: the node is created, stopped, and started again once the first retry is logged.
    const node = await PrivateNats.create();
    cleanup.push(() => node.destroy());
    await node.stop();
    const log = recordingLog();
    const connecting = connectBus({
      url: node.url,
      name: 'startup test',
      prefix: 'startup1.',
      log,
      startupWaitMs: 60_000,
    });
    await until(
      async () => (log.lines.some((l) => l.msg === RETRY_LINE && l.fields.step === 'connect') ? true : undefined),
      30_000,
      'a connect retry',
    );
    await node.start();
    const bus = await connecting;
    expect((await bus.jsm.streams.info(bus.subjects.mcpEventsStream)).config.name).toBe(bus.subjects.mcpEventsStream);
    await bus.close();

    // One node of three: no meta leader, ever. A short bound (each attempt's JetStream request
    // times out after 5 s; the one under way at the bound finishes): retries logged, then the
    // last error, a transient one.
    const lone = await PrivateNats.cluster(3, { start: 1 });
    cleanup.push(() => Promise.all(lone.map((n) => n.destroy())));
    const log2 = recordingLog();
    const err = await connectBus({
      url: lone[0]!.url,
      name: 'startup test',
      prefix: 'startup2.',
      log: log2,
      startupWaitMs: 6_000,
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(Error);
    expect(isTransientStartupError(err)).toBe(true);
    const retries = log2.lines.filter((l) => l.msg === RETRY_LINE);
    expect(retries.length).toBeGreaterThan(0);
    expect(retries.every((l) => l.fields.step === 'jetstream')).toBe(true);
  }, 120_000);

  it('the agent endpoint (core NATS only) started before its NATS node listens waits, not ready and alive, then serves', async () => {
    const node = await PrivateNats.create();
    cleanup.push(() => node.destroy());
    const stack = await Stack.start({ nats: node.url, registries: 0, projectors: 0, proxies: 0 });
    cleanup.push(() => stack.stop());
    await node.stop();
    const endpoint = await stack.spawn('endpoint', {}, { waitHealthy: false });
    await until(
      async () => (endpoint.logs.join('').includes(RETRY_LINE) ? true : undefined),
      60_000,
      'the endpoint to wait for NATS',
    );
    expect(endpoint.alive()).toBe(true);
    expect(
      await fetch(`${endpoint.url}/healthz`)
        .then((r) => r.status)
        .catch(() => 'refused'),
    ).not.toBe(200);
    await node.start();
    await waitHealthy(endpoint);
    expect(endpoint.alive()).toBe(true);
  }, 120_000);

  it('a wrong password is not waited out: connectBus fails at once, no retry logged, no secret in the error', async () => {
    const server = await NatsAuthServer.start();
    cleanup.push(() => server.stop());
    const log = recordingLog();
    const wrong = 'not-the-password-' + 'x'.repeat(16);
    const err = await connectBus({
      url: server.url,
      name: 'startup test',
      log,
      credentials: { user: 'projector', pass: wrong },
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.name).toBe('AuthorizationError');
    expect(log.lines.filter((l) => l.msg === RETRY_LINE)).toEqual([]);
    expect(`${err?.message} ${JSON.stringify(log.lines)}`).not.toContain(wrong);
  }, 60_000);
});
