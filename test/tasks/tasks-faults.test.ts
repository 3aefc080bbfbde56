import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import { startEverythingServer, startEverythingServerAt, type EverythingServer } from '../servers/everything.js';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/** A lease far longer than any wait of this file: a task another instance took over was given up, not lapsed. */
const LONG_LEASE_MS = '120000';

/**
 * Faults against real processes while tasks run (docs/tasks.md#faults): a proxy stopping gives
 * its leases up, so another takes its tasks at once; the upstream restarted mid-task ends the
 * task with a typed error; the proxies' Postgres connections broken mid-task lose nothing and
 * polling resumes. Two proxy processes, server-everything (a process) and a modern SDK v2 server.
 */
describe('tasks through faults', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let modern: TasksUpstream;
  let everything: EverythingServer;
  let procs: ProxyProcess[] = [];
  let tasks: TaskClient;
  let db: pg.Client;

  beforeAll(async () => {
    [system, modern, everything] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTasksUpstream({ durationMs: 5_000, pollIntervalMs: 300 }),
      startEverythingServer('streamableHttp'),
    ]);
    const env = { TASK_LEASE_MS: LONG_LEASE_MS, TASK_POLL_MIN_MS: '100', TASK_POLL_MAX_MS: '1000', LOG_LEVEL: 'warn' };
    procs = await Promise.all([spawnProxyProcess(system, env), spawnProxyProcess(system, env)]);
    await system.setServer('modern', modern.url);
    await system.setServer('every', everything.url);
    await system.createAgent('agent', ['modern', 'every'], 16);
    tasks = new TaskClient(system.nc, system.subjects);
    db = new pg.Client({ connectionString: system.db.url });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system?.stop();
    await Promise.all([modern?.close(), everything?.close()]);
  });

  const leaseOf = async (id: string): Promise<string | null> =>
    (await db.query<{ lease_owner: string | null }>('SELECT lease_owner FROM proxy.tasks WHERE id = $1', [id])).rows[0]
      ?.lease_owner ?? null;

  it("the upstream restarted mid-task: a 2025 task's session is gone, the task ends failed with task_lost, never hangs", async () => {
    const out = await system.call(
      'agent',
      'r-restart',
      'every__simulate-research-query',
      { topic: 'storms' },
      { timeoutMs: 1_500 },
    );
    const id = out.result.task!.id;
    const port = everything.port;
    await everything.close();
    everything = await startEverythingServerAt('streamableHttp', port);
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 60_000 });
    expect(ended.state).toBe('failed');
    expect(ended.error?.code).toBe('task_lost');
    await expect(tasks.taskResult(system.account, id)).rejects.toMatchObject({
      code: 'server_error',
      details: { reason: 'task_lost' },
    });
  });

  it("the proxies' Postgres connections broken mid-task: nothing is lost, polling resumes, the result reaches the runtime once", async () => {
    const out = await system.call(
      'agent',
      'r-pg',
      'modern__long-export',
      { format: 'avro' },
      { task: true, timeoutMs: 2_000 },
    );
    const id = out.result.task!.id;
    const events: TaskEvent[] = [];
    const waiting = tasks.waitTask(system.account, id, { timeoutMs: 90_000, onStatus: (e) => events.push(e) });
    const polls = (): number => modern.stats.gets.get([...modern.stats.gets.keys()].at(-1)!) ?? 0;
    await eventually(async () => (polls() >= 2 ? true : undefined), 30_000, 'the task polled');
    const killed = await db.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'proxy'",
    );
    expect(killed.rowCount).toBeGreaterThan(0);
    const ended = await waiting;
    expect(ended.state).toBe('completed');
    expect(events.filter((e) => e.state === 'completed')).toHaveLength(1);
    expect((await tasks.taskResult(system.account, id)).text).toBe('export ready: avro');
  });

  it('SIGTERM of the polling proxy gives its leases up: the other process takes the task at once, not after the lease, and finishes it', async () => {
    const out = await system.call(
      'agent',
      'r-term',
      'modern__long-export',
      { format: 'orc' },
      { task: true, timeoutMs: 2_000 },
    );
    const id = out.result.task!.id;
    const poller = procs.find((p) => p.instance === out.instance)!;
    const other = procs.find((p) => p !== poller)!;
    expect(await leaseOf(id)).toBe(poller.instance);
    await poller.stop();
    // Given up before the process exited: free, or already the other's.
    expect([null, other.instance]).toContain(await leaseOf(id));
    await eventually(
      async () => ((await leaseOf(id)) === other.instance ? true : undefined),
      30_000,
      'the other process holding the lease',
    );
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 60_000 });
    expect(ended.state).toBe('completed');
    expect((await tasks.taskResult(system.account, id)).text).toBe('export ready: orc');
  });
});
