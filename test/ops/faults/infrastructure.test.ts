/**
 * Faults of the infrastructure under load, with private NATS, Postgres and
 * Redis processes (never the machine's) and the services as processes:
 * - NATS killed and restarted under call load: calls fail typed and retryable while it is down,
 *   resume by themselves, and JetStream loses nothing (a change after the restart projects);
 * - Postgres killed and restarted under action and call load: actions fail typed, nothing half
 *   written, both resume by themselves;
 * - Redis down: signed actions fail closed (the nonce check cannot run), calls fail closed at the
 *   call limiter; both resume when it is back;
 * - a registry killed between its commit and its event: the event, written with the commit in the
 *   registry's outbox, is published by the next registry's sweep, exactly once.
 * Each prints what the user sees and the recovery time (docs/operations.md has the lines).
 */
import pg from 'pg';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { echoTool, type TestMcpServer, type TestTool } from '../../servers/index.js';
import type { FaultyFront } from '../support/faulty-front.js';
import { queryOnce, startFaultStack, type FaultStack } from '../support/fault-stack.js';
import { available, PrivateNats, PrivatePostgres, PrivateRedis } from '../support/infra.js';
import { LoadLoop, formatSummary } from '../support/load.js';
import { until, type Stack } from '../support/stack.js';

const have = available();

function report(line: string): void {
  process.stdout.write(`fault: ${line}\n`);
}

describe.skipIf(!have.nats)('NATS killed and restarted under call load', () => {
  let fixture: FaultStack<PrivateNats> | undefined;
  let nats: PrivateNats;
  let stack: Stack;
  let upstream: TestMcpServer;
  let agent: string;

  beforeAll(async () => {
    fixture = await startFaultStack({ infra: PrivateNats.create(), stack: (n) => ({ nats: n.url }) });
    ({ infra: nats, stack, upstream } = fixture);
    agent = await stack.createAgent('agent', ['up'], 1);
  }, 120_000);

  afterAll(() => fixture?.stop());

  it('calls fail typed while it is down, resume by themselves, and JetStream keeps its streams and consumer', async () => {
    const load = new LoadLoop(
      (w, i) =>
        stack.call(agent, `run-${w}-${Math.floor(i / 20)}`, 'up__echo', { text: `${w}-${i}` }, { timeoutMs: 5_000 }),
      { concurrency: 4, maxMs: 60_000 },
    );
    await until(async () => (load.successesAfter(0) > 50 ? true : undefined), 30_000, 'steady load');
    const killedAt = Date.now();
    await nats.kill();
    await new Promise((r) => setTimeout(r, 1_500));
    const restartedAt = Date.now();
    await nats.start();
    await until(
      async () => (load.successesAfter(restartedAt) > 20 ? true : undefined),
      40_000,
      'calls after the restart',
    );
    const summary = await load.stop();
    const recovery = load.recoveryAfter(restartedAt);
    // What the user saw while NATS was down: typed errors only, each one a code the runtime retries on.
    const codes = Object.keys(summary.errorsByCode);
    for (const c of codes) expect(['transport_error', 'timeout', 'call_lost'], `error ${c}`).toContain(c);
    expect(recovery).toBeDefined();
    // Every service is still up (none crashed on the lost connection).
    for (const s of stack.services) expect(s.alive(), s.instance).toBe(true);
    // Nothing lost in JetStream: a change after the restart reaches the projector's durable consumer.
    upstream.setTools([
      echoTool(),
      {
        name: 'added',
        description: 'new after the restart',
        handler: () => ({ content: [{ type: 'text', text: 'new' }] }),
      },
    ]);
    await stack.api.act('RefreshMcpServer', { name: 'up' });
    await until(
      async () =>
        (await stack.api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length === 2 ? true : undefined,
      30_000,
      'the new tool projected after the restart',
    );
    report(
      `NATS killed under load (down ${restartedAt - killedAt} ms): ${formatSummary(summary)}; first call ok ${recovery ?? '?'} ms after the restart; JetStream change after it projected`,
    );
  }, 120_000);
});

describe.skipIf(!have.postgres)('Postgres killed and restarted under load', () => {
  let fixture: FaultStack<PrivatePostgres> | undefined;
  let postgres: PrivatePostgres;
  let stack: Stack;
  let agent: string;

  beforeAll(async () => {
    // The endpoint too: its pool and its token-revocation LISTEN connection lose Postgres as well.
    fixture = await startFaultStack({
      infra: PrivatePostgres.create(),
      stack: (p) => ({ postgres: p.url(), endpoints: 1 }),
    });
    ({ infra: postgres, stack } = fixture);
    agent = await stack.createAgent('agent', ['up'], 1);
  }, 120_000);

  afterAll(() => fixture?.stop());

  it('actions fail typed while it is down, nothing half-written, calls and actions resume by themselves', async () => {
    // New runs keep the proxy reading grants and documents; actions write and read the registry.
    const calls = new LoadLoop(
      (w, i) => stack.call(agent, `run-${w}-${i}`, 'up__echo', { text: `${w}-${i}` }, { timeoutMs: 5_000 }),
      { concurrency: 3, maxMs: 60_000 },
    );
    const created: string[] = [];
    const actions = new LoadLoop(
      async (w, i) => {
        const name = `a-${w}-${i}`;
        await stack.api.act('CreateAgent', { name, definition: { mcpServers: ['up'] } });
        created.push(name);
      },
      { concurrency: 1, maxMs: 60_000, pauseMs: 50 },
    );
    await until(
      async () => (calls.successesAfter(0) > 30 && actions.successesAfter(0) > 5 ? true : undefined),
      30_000,
      'steady load',
    );
    const killedAt = Date.now();
    await postgres.kill();
    await new Promise((r) => setTimeout(r, 1_500));
    const restartedAt = Date.now();
    await postgres.start();
    // No service exits on the loss (every pool client has its own 'error' listener: a connection
    // lent out when the server went away, 57P01, used to end the process unheard).
    const exited = (): string[] =>
      stack.services
        .filter((x) => !x.alive())
        .map(
          (svc) =>
            `${svc.name} exited (${/^(error: .*|Error: .*)$/m.exec(svc.logs.join(''))?.[1] ?? `exit ${String(svc.child.exitCode ?? svc.child.signalCode)}`})`,
        );
    await until(
      async () =>
        calls.successesAfter(restartedAt) > 10 && actions.successesAfter(restartedAt) > 3 ? true : undefined,
      40_000,
      'load after the restart',
    ).catch(async (err: unknown) => {
      const tail = (l: LoadLoop): string => JSON.stringify(l.outcomes.slice(-5));
      throw new Error(
        `${(err as Error).message}: calls after ${calls.successesAfter(restartedAt)} ${tail(calls)}, actions after ${actions.successesAfter(restartedAt)} ${tail(actions)}\n${stack.services
          .filter((x) => !x.alive())
          .map(
            (x) =>
              `${x.instance} exited ${String(x.child.exitCode ?? x.child.signalCode)}: ${x.logs.join('').slice(-2500)}`,
          )
          .join('\n')}`,
      );
    });
    const [callSummary, actionSummary] = await Promise.all([calls.stop(), actions.stop()]);
    const callRecovery = calls.recoveryAfter(restartedAt);
    const actionRecovery = actions.recoveryAfter(restartedAt);
    // Typed errors only (no crash, no hang): the codes the API documents for an unavailable store.
    // Typed as the store's outage (`unavailable`, dependency postgres), never `internal`.
    for (const c of Object.keys(actionSummary.errorsByCode)) expect(c, `action error ${c}`).toBe('unavailable');
    expect(exited(), 'services that exited on the loss of Postgres').toEqual([]);
    expect(
      stack.services
        .filter((x) => x.alive())
        .map((x) => x.name)
        .sort(),
    ).toEqual(['endpoint', 'projector', 'proxy', 'registry']);
    // The endpoint answers after it (its revocation channel reconnects by itself).
    expect((await fetch(`${stack.of('endpoint')[0]!.url}/healthz`)).ok).toBe(true);
    // …which the loss did reach (not a test that cannot fail).
    expect(stack.of('endpoint')[0]!.logs.join('')).toMatch(/token revocation channel lost/);
    // Nothing half-written: every agent the API said it created is there, each exactly once.
    const rows = (
      await queryOnce<{ name: string }>(stack.env.DATABASE_URL, 'SELECT name FROM registry.agents')
    ).rows.map((r) => r.name);
    for (const name of created)
      expect(
        rows.filter((r) => r === name),
        name,
      ).toHaveLength(1);
    report(
      `Postgres killed under load (down ${restartedAt - killedAt} ms): calls ${formatSummary(callSummary)}, first ok ${callRecovery ?? '?'} ms after the restart; ` +
        `actions ${formatSummary(actionSummary)}, first ok ${actionRecovery ?? '?'} ms after; every acknowledged write present once; no service exited`,
    );
  }, 120_000);
});

describe.skipIf(!have.redis)('Redis down', () => {
  let fixture: FaultStack<PrivateRedis> | undefined;
  let redis: PrivateRedis;
  let stack: Stack;
  let upstream: TestMcpServer;
  let agent: string;

  beforeAll(async () => {
    // A destructive tool besides: its call needs an approval, which lives in Redis.
    const drop: TestTool = {
      name: 'drop',
      description: 'Drops it.',
      inputSchema: { type: 'object' },
      annotations: { destructiveHint: true },
      handler: () => ({ content: [{ type: 'text', text: 'dropped' }] }),
    };
    fixture = await startFaultStack({
      infra: PrivateRedis.create(),
      stack: (r) => ({ redis: r.url }),
      tools: [echoTool(), drop],
    });
    ({ infra: redis, stack, upstream } = fixture);
    agent = await stack.createAgent('agent', ['up'], 2);
  }, 120_000);

  afterAll(() => fixture?.stop());

  it('signed actions fail closed (no nonce check, no action); calls fail closed at the limiter; both resume when it is back', async () => {
    expect((await stack.call(agent, 'before', 'up__echo', { text: 'x' })).result.text).toBe('echo: x');
    const downAt = Date.now();
    await redis.kill();
    // An action: refused, typed, never run without its replay check, and said at once: the
    // registry's client has no offline queue and a command timeout (it used to queue the command
    // behind its reconnects and answer `internal` after ~20 s).
    const askedAt = performance.now();
    const before = (await stack.api.act<{ servers: unknown[] }>('ListMcpServers').catch((e: unknown) => e)) as
      WireError | { servers: unknown[] };
    const actionMs = Math.round(performance.now() - askedAt);
    expect(before).toBeInstanceOf(WireError);
    const actionErr = before as WireError;
    expect(actionErr.code).toBe('unavailable');
    expect(actionErr.details).toMatchObject({ dependency: 'redis' });
    expect(actionErr.retryAfterMs).toBeGreaterThan(0);
    expect(actionErr.retryable).toBe(true);
    // No address, password or driver text in what the caller sees.
    expect(JSON.stringify(actionErr.toJSON())).not.toContain(new URL(redis.url).host);
    expect(JSON.stringify(actionErr.toJSON())).not.toMatch(/redis:\/\/|password|Stream isn't|ECONN/i);
    // Bounded by the client's command timeout (2 s), far below the ~20 s of the queued retries: a
    // generous ceiling only, so a loaded machine cannot fail it.
    expect(actionMs).toBeLessThan(10_000);
    const writeAt = performance.now();
    const write = await stack.api
      .act('CreateAgent', { name: 'while-down', definition: { mcpServers: [] } })
      .catch((e: unknown) => e);
    const writeMs = Math.round(performance.now() - writeAt);
    expect(write).toBeInstanceOf(WireError);
    expect((write as WireError).code).toBe('unavailable');
    expect(writeMs).toBeLessThan(10_000);
    // A call: the per-agent concurrency limit and rate limits live in Redis.
    const call = await stack.call(agent, 'during', 'up__echo', { text: 'y' }, { timeoutMs: 10_000 }).then(
      (r) => ({ ok: true as const, text: r.result.text }),
      (e: unknown) => ({ ok: false as const, code: (e as WireError).code, message: (e as WireError).message }),
    );
    const callLine = call.ok
      ? `calls degrade: served without the limiter (${call.text})`
      : `calls fail closed with ${call.code} ("${call.message}")`;
    if (!call.ok)
      expect(['transport_error', 'server_error', 'rate_limited', 'quota_exceeded', 'unavailable', 'timeout']).toContain(
        call.code,
      );
    // A call that needs an approval: its step in Redis fails as the store's outage, typed and
    // retryable, the server not called; never `internal`.
    const upstreamCalls = upstream.stats.calls;
    const asking = await stack.call(agent, 'during', 'up__drop', {}, { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(asking).toBeInstanceOf(WireError);
    expect((asking as WireError).code).toBe('unavailable');
    expect((asking as WireError).details).toMatchObject({ dependency: 'redis' });
    expect((asking as WireError).retryable).toBe(true);
    expect(JSON.stringify((asking as WireError).toJSON())).not.toMatch(/redis:\/\/|password|Stream isn't|ECONN/i);
    expect(upstream.stats.calls).toBe(upstreamCalls);

    const upAt = Date.now();
    await redis.start();
    const actionBack = await until(
      async () =>
        (await stack.api.act('ListMcpServers').catch(() => undefined)) !== undefined ? Date.now() - upAt : undefined,
      30_000,
      'actions back',
    );
    const callBack = await until(
      async () =>
        (await stack
          .call(agent, `after-${Date.now()}`, 'up__echo', { text: 'z' }, { timeoutMs: 5_000 })
          .catch(() => undefined)) !== undefined
          ? Date.now() - upAt
          : undefined,
      30_000,
      'calls back',
    );
    // The write refused while down did not happen.
    expect(
      (await queryOnce(stack.env.DATABASE_URL, "SELECT 1 FROM registry.agents WHERE name = 'while-down'")).rowCount,
    ).toBe(0);
    for (const s of stack.services) expect(s.alive(), s.instance).toBe(true);
    report(
      `Redis down (${upAt - downAt} ms): actions fail closed with ${actionErr.code} ("${actionErr.message}", retry after ${actionErr.retryAfterMs} ms) in ${actionMs} ms (a write in ${writeMs} ms), nothing written; ${callLine}; ` +
        `actions back ${actionBack} ms and calls back ${callBack} ms after Redis`,
    );
  }, 120_000);
});

describe.skipIf(!have.nats)('a registry killed between its commit and its event', () => {
  let fixture: FaultStack<PrivateNats> | undefined;
  let nats: PrivateNats;
  let front: FaultyFront;
  let stack: Stack;

  beforeAll(async () => {
    // The registry reaches NATS through the front; the projector and the proxy directly.
    fixture = await startFaultStack({
      infra: PrivateNats.create(),
      stack: (n) => ({ nats: n.url }),
      registryThroughFront: { port: (n) => n.port },
    });
    ({ infra: nats, stack } = fixture);
    front = fixture.front!;
  }, 120_000);

  afterEach(() => {
    front.mode = 'pass';
  });

  afterAll(() => fixture?.stop());

  // The outbox: the registry writes the agent's event in the transaction that commits
  // the agent and publishes it after; killed in between, the row stays, and the next registry's
  // sweep (one runs at its start) publishes it with its message id (stored once).
  it('the committed agent still reaches the projector (its tools are projected) after a new registry starts', async () => {
    const [registry] = stack.of('registry');
    // Its publishes go nowhere from now on: the commit happens, the event does not leave.
    front.mode = 'blackhole';
    const pending = stack.api
      .act('CreateAgent', { name: 'orphan', definition: { mcpServers: ['up'] } })
      .catch(() => undefined);
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    const agentId = await until(
      async () => (await db.query<{ id: string }>("SELECT id FROM registry.agents WHERE name = 'orphan'")).rows[0]?.id,
      20_000,
      'the commit',
    );
    await db.end();
    await stack.kill(registry!);
    await pending;
    front.mode = 'pass';
    await stack.spawn('registry', { NATS_URL: nats.url });
    const started = Date.now();
    const projected = await until(
      async () =>
        (await stack.api.act<{ tools: unknown[] }>('ListAgentTools', { agent: agentId })).tools.length > 0
          ? true
          : undefined,
      20_000,
      'the orphaned agent projected',
    ).catch(() => false);
    report(
      `registry killed between commit and event: agent committed, ${projected === true ? `projected after ${Date.now() - started} ms (the outbox's sweep at the new registry's start)` : 'its event lost (tools never projected in 20 s)'}`,
    );
    expect(projected).toBe(true);
    // Exactly once: the stream holds the agent's one event (its only revision), whoever sent it.
    const subject = stack.subjects.agentChanged(stack.api.principal, agentId);
    const jsm = await jetstreamManager(stack.nc);
    const info = await jsm.streams.info(await jsm.streams.find(subject), { subjects_filter: subject });
    expect(info.state.subjects?.[subject]).toBe(1);
  }, 90_000);
});
