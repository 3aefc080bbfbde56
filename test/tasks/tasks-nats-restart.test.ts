import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects, type TaskEvent } from '@mcpx/contracts';
import { TaskClient, connectRuntime, type RuntimeConnection } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ApiClient } from '../support/api-client.js';
import { uniqueNamespace } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { taskInRow } from '../support/fixtures/task-systems.js';

/**
 * NATS restarted mid-task (docs/tasks.md#faults): the stack's own authorized nats-server is
 * stopped while a task runs and started again on the same port once the task has ended upstream.
 * The proxy polls on (HTTP and Postgres need no NATS), the task ends in its row, and the waiting
 * runtime, reconnected, hears of it (it reads the row again after a reconnection: events sent
 * while it was away are not delivered) and takes the result: nothing is lost. When the proxy comes
 * back after the runtime, the runtime's read after its reconnection finds no proxy: it reads again
 * until one answers, and the proxy, back, publishes the end again (the one it published while
 * away was lost with its connection): whichever comes first ends the wait, long before its bound.
 */
describe('a task through a NATS restart', { timeout: 180_000 }, () => {
  let nats: NatsAuthServer;
  let system: ProcessSystem;
  let upstream: TasksUpstream;
  let api: ApiClient;
  let runtime: RuntimeConnection;
  let agent: string;
  let db: pg.Client;
  const prefix = uniqueNamespace().natsPrefix;

  beforeAll(async () => {
    nats = await NatsAuthServer.start({ prefix });
    [system, upstream] = await Promise.all([
      ProcessSystem.start({
        env: { NATS_PREFIX: prefix, TASK_POLL_MIN_MS: '100', TASK_LEASE_MS: '3000' },
        natsEnv: (s) => nats.env(s),
      }),
      startTasksUpstream({ durationMs: 6_000, pollIntervalMs: 200 }),
    ]);
    api = new ApiClient(system.apiUrl);
    await api.act('SetMcpServer', { name: 'modern', config: { url: upstream.url } });
    agent = (
      await api.act<{ agent: { id: string } }>('CreateAgent', {
        name: 'nats-agent',
        definition: { mcpServers: ['modern'] },
      })
    ).agent.id;
    await eventually(
      async () =>
        (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length >= 3 ? true : undefined,
      30_000,
      'the tools projected',
    );
    const { user, pass } = nats.credentials('runtime');
    runtime = await connectRuntime({ url: nats.url, prefix, credentials: { user, pass } });
    db = new pg.Client({ connectionString: system.db.url });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await runtime?.close();
    await upstream?.close();
    await system?.stop();
    await nats?.stop();
  });

  /** Until the task has completed in its row (the proxy polls on while NATS is down). */
  const endedInItsRow = (id: string): Promise<true> =>
    taskInRow(db, id, 'completed', 60_000, 'the task ended in its row while NATS was down');

  it('the task ends while NATS is down; after the restart the runtime hears of it once and takes the result', async () => {
    const tasks = new TaskClient(runtime.nc, makeSubjects(prefix));
    const out = await runtime.client.call({
      account: api.principal,
      agent,
      run: 'nr-1',
      tool: 'modern__long-export',
      arguments: { format: 'json' },
      task: true,
      timeoutMs: 2_000,
    });
    const id = out.result.task!.id;
    const events: TaskEvent[] = [];
    const waiting = tasks.waitTask(api.principal, id, { timeoutMs: 120_000, onStatus: (e) => events.push(e) });
    // Down until the task has completed upstream and in its row.
    await nats.restart(0, async () => void (await endedInItsRow(id)));
    const ended = await waiting;
    expect(ended.state).toBe('completed');
    expect(events.filter((e) => e.state === 'completed').length).toBeLessThanOrEqual(1);
    expect((await tasks.taskResult(api.principal, id)).text).toBe('export ready: json');
    expect(upstream.stats.created).toBe(1);
  });

  it('the proxy comes back after the runtime: the runtime reads again until a proxy answers, the proxy publishes its lost end again, and the end is heard long before the bound', async () => {
    const tasks = new TaskClient(runtime.nc, makeSubjects(prefix));
    const out = await runtime.client.call({
      account: api.principal,
      agent,
      run: 'nr-2',
      tool: 'modern__long-export',
      arguments: { format: 'csv' },
      task: true,
      timeoutMs: 2_000,
    });
    const id = out.result.task!.id;
    const proxy = system.services.find((s) => s.name === 'proxy')!;
    const reads: string[] = [];
    let reconnects = 0;
    const statuses = runtime.nc.status();
    void (async () => {
      for await (const s of statuses) if (s.type === 'reconnect') reconnects++;
    })();
    const waiting = tasks.waitTask(api.principal, id, {
      timeoutMs: 120_000,
      outageReadMs: 200,
      onRead: (t) => reads.push(t?.state ?? 'outage'),
    });
    try {
      await nats.restart(0, async () => {
        // The task ends upstream and in its row while NATS is down: the proxy's end event is lost.
        await endedInItsRow(id);
        // Held, so that the runtime is back first and its read after the reconnection finds no proxy.
        proxy.child.kill('SIGSTOP');
      });
      await eventually(async () => (reconnects > 0 ? true : undefined), 30_000, 'the runtime reconnected');
      await expect(tasks.getTask(api.principal, id)).rejects.toMatchObject({ code: 'transport_error' });
      // The wait's own read after its reconnection finds no proxy, before the proxy (and its end, published again) is back.
      await eventually(
        async () => (reads.includes('outage') ? true : undefined),
        30_000,
        "the wait's read found no proxy",
      );
    } finally {
      proxy.child.kill('SIGCONT');
      (statuses as { stop?: () => void }).stop?.();
    }
    // The proxy reconnects in seconds; the wait's own bound is two minutes. Heard by a read, not
    // by the bound: the wait ends well within a bound far below its own.
    let bound: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      waiting,
      new Promise<'bound'>((r) => (bound = setTimeout(() => r('bound'), 45_000))),
    ]).finally(() => clearTimeout(bound));
    expect(first).not.toBe('bound');
    expect(first).toMatchObject({ state: 'completed' });
    expect(reads).toContain('outage');
    // Heard from a read that found the end, or from the end the proxy published again once back.
    expect(['completed', 'outage']).toContain(reads.at(-1));
    expect((await tasks.taskResult(api.principal, id)).text).toBe('export ready: csv');
    expect(upstream.stats.created).toBe(2);
  });
});
