import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/** `wait {}`: holds the call until the test releases it (or the call is cancelled). */
function gatedTool(): { tool: TestTool; started: () => number; releaseAll: () => void } {
  const waiting: Array<() => void> = [];
  let started = 0;
  const tool: TestTool = {
    name: 'wait',
    description: 'Wait until released.',
    handler: (_args, extra) =>
      new Promise((resolve) => {
        started++;
        const done = (): void => resolve({ content: [{ type: 'text', text: 'released' }] });
        waiting.push(done);
        extra.signal.addEventListener('abort', done);
      }),
  };
  return { tool, started: () => started, releaseAll: () => waiting.splice(0).forEach((f) => f()) };
}

/**
 * A caller whose proxy instance dies mid-call learns it from `mcp.proxy.calls.held` within a few
 * checks (`call_lost`), instead of waiting out the call's timeout; a live instance that is slow
 * to answer keeps its call.
 */
describe.each(['modern', 'legacy'] as const)('a proxy instance dying mid-call (a %s server)', (era) => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let proxy: ProxyProcess;
  const gate = gatedTool();
  let client: ProxyClient;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTestMcpServer({ era, tools: [echoTool(), gate.tool] }),
    ]);
    proxy = await spawnProxyProcess(system);
    await system.setServer('slow', upstream.url);
    await system.createAgent('agent', ['slow'], 2);
    // Checks every 100 ms: the test sees several of them answered (or missed) quickly.
    client = new ProxyClient(system.nc, system.subjects, {
      liveness: { afterMs: 100, everyMs: 100, answerMs: 500, misses: 3 },
    });
  });

  afterAll(async () => {
    gate.releaseAll();
    await proxy?.stop();
    await system?.stop();
    await upstream?.close();
  });

  const call = (run: string) =>
    client.call({
      account: system.account,
      agent: system.agentId('agent'),
      run,
      tool: 'slow__wait',
      arguments: {},
      timeoutMs: 90_000,
    });

  it('keeps a long call whose instance is alive, however many checks pass', async () => {
    const before = gate.started();
    const pending = call('alive-run');
    await eventually(async () => (gate.started() > before ? true : undefined), 20_000, 'the call to reach the server');
    // Let many checks go by while the call is held, then release it.
    let settled = false;
    void pending.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 1_000));
    expect(settled).toBe(false);
    gate.releaseAll();
    const { result } = await pending;
    expect(result.text).toBe('released');
  });

  it('answers call_lost when the instance is killed, long before the call timeout', async () => {
    const before = gate.started();
    const pending = call('doomed-run').then(
      () => {
        throw new Error('the call succeeded after its proxy was killed');
      },
      (err: unknown) => err,
    );
    await eventually(async () => (gate.started() > before ? true : undefined), 20_000, 'the call to reach the server');
    await proxy.kill();
    const err = await pending;
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('call_lost');
    expect((err as WireError).retryable).toBe(false);
    expect((err as WireError).httpStatus).toBe(502);
    // The run is no longer stuck to the dead instance: a new instance serves the next call.
    proxy = await spawnProxyProcess(system);
    gate.releaseAll();
    const echoed = await client.call({
      account: system.account,
      agent: system.agentId('agent'),
      run: 'doomed-run',
      tool: 'slow__echo',
      arguments: { text: 'again' },
    });
    expect(echoed.result.text).toBe('echo: again');
    expect(echoed.instance).toBe(proxy.instance);
  }, 60_000);
});

describe('no proxy instance at all', () => {
  let system: ProxySystem;

  beforeAll(async () => {
    system = await ProxySystem.start({ proxies: 0 });
  });

  afterAll(async () => {
    await system?.stop();
  });

  it('answers a typed, retryable transport_error at once (nothing ran)', async () => {
    const err = await system.client
      .call({ account: system.account, agent: 'nobody', run: 'r', tool: 'x__y', arguments: {} })
      .then(
        () => new Error('a call succeeded with no proxy'),
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('transport_error');
    expect((err as WireError).retryable).toBe(true);
    expect((err as WireError).message).toBe('no proxy instance is running to take the call');
  });
});
