import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskClient } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

const LEASE_MS = 4_000;
const POLL_MS = 500;
/** What a claim counts for a get under way: half the lease. */
const FLIGHT_MS = LEASE_MS / 2;
/** Room for a loaded box between a task being due and its get reaching the server. */
const SLACK_MS = 1_500;

interface Stats {
  taskStatements?: number;
}

/**
 * The poll loop sleeps until a task is due (docs/tasks.md#the-broker): an idle proxy sends no
 * statement to Postgres but its one look at the rows a lease (here 4 s; before, a claim every
 * 100 ms and an expiry sweep every 2 s), and still polls, at its due time, a task another instance
 * created and then left: killed (its lease lapses, as the look found it would) or stopped (its
 * notice on the tasks channel wakes the others). Three real proxy processes, a task server that
 * notes when each `tasks/get` reaches it. The starting code fails the first and the last (it
 * counted no statements, and sent a claim every 100 ms); it passed the killed creator's case too.
 */
describe('an idle poll loop', () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let procs: ProxyProcess[] = [];
  const gets = new Map<string, number[]>();
  const stats = async (p: ProxyProcess): Promise<Stats> =>
    (await (await fetch(`${p.internalUrl}/stats`)).json()) as Stats;
  const statements = async (p: ProxyProcess): Promise<number> => {
    const n = (await stats(p)).taskStatements;
    expect(n, 'the proxy counts its task statements').toBeTypeOf('number');
    return n!;
  };
  /** The longest gap between two gets of the task, as its server took them. */
  const widestGap = (upstreamTask: string): number => {
    const at = gets.get(upstreamTask) ?? [];
    let widest = 0;
    for (let i = 1; i < at.length; i++) widest = Math.max(widest, at[i]! - at[i - 1]!);
    return widest;
  };

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTasksUpstream({
        durationMs: 8_000,
        pollIntervalMs: POLL_MS,
        onGet: (id) => gets.set(id, [...(gets.get(id) ?? []), Date.now()]),
      }),
    ]);
    const env = { TASK_LEASE_MS: String(LEASE_MS), TASK_POLL_MIN_MS: '100', LOG_LEVEL: 'warn' };
    procs = await Promise.all([0, 1, 2].map(() => spawnProxyProcess(system, env)));
    await system.setServer('modern', upstream.url);
    await system.createAgent('agent', ['modern'], 3);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system?.stop();
    await upstream?.close();
  });

  /** A task created on `creator` (its run stuck there), answered with its handle; its id upstream. */
  const createdOn = async (creator: ProxyProcess, run: string): Promise<{ id: string; upstreamId: string }> => {
    system.client.stick(run, creator.instance);
    const known = new Set(gets.keys());
    const out = await system.call(
      'agent',
      run,
      'modern__long-export',
      { format: 'csv' },
      { task: true, timeoutMs: 300 },
    );
    expect(out.instance).toBe(creator.instance);
    const id = out.result.task?.id;
    expect(id).toBeDefined();
    // Its creator polls it first: its first get names it upstream.
    const upstreamId = await eventually(
      async () => [...gets.keys()].find((k) => !known.has(k)),
      20_000,
      "the task's first poll",
    );
    return { id: id!, upstreamId };
  };

  it('sends no statement while nothing is due but its one look at the rows a lease', async () => {
    const before = await Promise.all(procs.map(statements));
    await new Promise((r) => setTimeout(r, 5_000));
    const after = await Promise.all(procs.map(statements));
    for (const [i, n] of after.entries())
      // Over 5 s: at most two looks (a claim and a look each) and one purge (two statements).
      expect(n - before[i]!, `statements of ${procs[i]!.instance}`).toBeLessThanOrEqual(6);
  });

  it('polls a task whose creator was killed once its lease lapses, never later', async () => {
    const [, creator] = procs;
    const { id, upstreamId } = await createdOn(creator!, 'r-killed');
    await creator!.kill();
    const tasks = new TaskClient(system.nc, system.subjects);
    const ended = await eventually(
      async () => {
        const t = await tasks.getTask(system.account, id);
        return t.state === 'completed' ? t : undefined;
      },
      30_000,
      'the task finished by another instance',
    );
    expect(ended.state).toBe('completed');
    // The creator's last get (or its claim's flight), the lease, then the next instance's get.
    expect(widestGap(upstreamId)).toBeLessThanOrEqual(POLL_MS * 1.1 + FLIGHT_MS + LEASE_MS + SLACK_MS);
  });

  it('polls a task its stopping creator let go at its next due time, told by the notice', async () => {
    const [, , creator] = procs;
    const { id, upstreamId } = await createdOn(creator!, 'r-stopped');
    const idle = procs[0]!;
    const before = await statements(idle);
    await creator!.stop();
    const tasks = new TaskClient(system.nc, system.subjects);
    await eventually(
      async () => ((await tasks.getTask(system.account, id)).state === 'completed' ? true : undefined),
      30_000,
      'the task finished by the instance left',
    );
    expect(await statements(idle)).toBeGreaterThan(before);
    // Its interval (jittered), not a look later: the notice woke the idle instance at once.
    expect(widestGap(upstreamId)).toBeLessThanOrEqual(POLL_MS * 1.2 + SLACK_MS);
  });
});
