import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { firstCompleted } from '../support/fixtures/task-systems.js';

interface Stats {
  runs: number;
  liveTasks: number;
  taskWaitsWokenElsewhere?: number;
}

/**
 * The instance that creates a task keeps a small record of it (its wire target). When that
 * instance loses the task's lease (here: SIGSTOP, a stalled instance) and another instance
 * finishes the task, the creator forgets its record once it runs again: before, only the
 * instance that ended a task removed it, so every task taken over left one behind for good.
 * Two real proxy processes; the records counted from each one's `/stats`.
 */
describe('a task that ends on another instance than its creator', () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let procs: ProxyProcess[] = [];
  const stats = async (p: ProxyProcess): Promise<Stats> =>
    (await (await fetch(`${p.internalUrl}/stats`)).json()) as Stats;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTasksUpstream({ durationMs: 3_000, pollIntervalMs: 300 }),
    ]);
    const env = { TASK_LEASE_MS: '1000', TASK_POLL_MIN_MS: '100', LOG_LEVEL: 'warn' };
    procs = await Promise.all([spawnProxyProcess(system, env), spawnProxyProcess(system, env)]);
    await system.setServer('modern', upstream.url);
    await system.createAgent('agent', ['modern'], 3);
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) p.child.kill('SIGCONT');
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system?.stop();
    await upstream?.close();
  });

  it("the creator's record of the task goes once the other instance has finished it", async () => {
    const out = await system.call(
      'agent',
      'r-elsewhere',
      'modern__long-export',
      { format: 'csv' },
      { task: true, timeoutMs: 500 },
    );
    const id = out.result.task?.id;
    expect(id).toBeDefined();
    const creator = procs.find((p) => p.instance === out.instance)!;
    const other = procs.find((p) => p.instance !== out.instance)!;
    expect(creator).toBeDefined();
    expect((await stats(creator)).liveTasks).toBe(1);
    expect((await stats(other)).liveTasks).toBe(0);

    // The task's end, as published: only the other instance runs while the creator is stopped.
    const { completed, sub } = firstCompleted(system.nc, system.subjects.taskStatus(system.account, id!));
    await system.nc.flush();
    creator.child.kill('SIGSTOP');
    try {
      const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000).unref());
      const ended = await Promise.race([completed, timeout]);
      expect(ended?.state, 'the other instance finished the task').toBe('completed');
    } finally {
      sub.unsubscribe();
      creator.child.kill('SIGCONT');
    }
    expect((await stats(other)).liveTasks).toBe(0);
    // Running again, the creator looks its unpolled task up and forgets it.
    await eventually(
      async () => ((await stats(creator)).liveTasks === 0 ? true : undefined),
      20_000,
      "the creator's record of a task finished elsewhere",
    );
    expect(upstream.stats.created).toBe(1);
  });

  // The call's bound (110 s) is far past the test's (60 s): only a wake answers it in time. Before,
  // the creator read the row at the bound, so the test ran out first.
  it('a call waiting on its creating instance is woken when another instance ends the task', async () => {
    const creator = procs[0]!;
    const other = procs[1]!;
    const run = 'r-woken';
    system.client.stick(run, creator.instance);
    const { completed, sub } = firstCompleted(system.nc, system.subjects.taskEventsOf(system.account));
    await system.nc.flush();
    const woken = (await stats(creator)).taskWaitsWokenElsewhere ?? 0;
    const call = system.call(
      'agent',
      run,
      'modern__long-export',
      { format: 'json' },
      { task: true, timeoutMs: 110_000 },
    );
    try {
      // The task is recorded on its creator, which waits for it within the call bound.
      await eventually(
        async () => ((await stats(creator)).liveTasks === 1 ? true : undefined),
        20_000,
        'the task created on its instance',
      );
      creator.child.kill('SIGSTOP');
      try {
        const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000).unref());
        expect((await Promise.race([completed, timeout]))?.state, 'the other instance finished the task').toBe(
          'completed',
        );
      } finally {
        creator.child.kill('SIGCONT');
      }
      const out = await call;
      expect(out.instance).toBe(creator.instance);
      expect(out.result.task, 'the result, not the handle').toBeUndefined();
      expect(JSON.stringify(out.result)).toContain('export ready: json');
      expect((await stats(creator)).taskWaitsWokenElsewhere).toBe(woken + 1);
      expect((await stats(other)).liveTasks).toBe(0);
    } finally {
      sub.unsubscribe();
    }
  }, 60_000);
});
