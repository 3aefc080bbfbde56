import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { collectedStats, inWaves, type CollectedStats } from '../support/fixtures/proxy-heap.js';

const TASKS = 1_000;
const WARM = 100;
/** Calls at once while opening tasks. */
const AT_ONCE = 20;
/**
 * The bound per open task: about 2.1 KiB measured (1,000 tasks, a loaded 2-core box), so about 3×.
 * An open task that kept its pool run (as before) fails it on the runs count first.
 */
const BOUND_BYTES = 6_144;
/** The server's poll interval, allowed by the proxy: no task is due during the test, so no poll is under way at a reading. */
const POLL_MS = 600_000;

/**
 * What an open modern task costs the proxy that created it (and polls it): its live JS heap after a
 * full collection (the process runs with --expose-gc; `/stats/collected` collects, then reads),
 * before and after 1,000 tasks that stay open (`never-ends`, created with the handle answered at
 * once). An open task is a row in Postgres; the proxy keeps only what its polls need. The server's
 * poll interval (10 minutes, allowed by the proxy's TASK_POLL_MAX_MS) keeps every task from being
 * due during the test: the measure is of tasks at rest, not of polls under way. 100 tasks opened first compile the path a new task takes.
 */
describe('an open modern task in a proxy process', () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let proxy: ProxyProcess;
  const collected = (): Promise<CollectedStats> => collectedStats(proxy);

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({
        proxies: 0,
        env: {
          PROXY_MAX_CONCURRENCY_PER_SERVER: '0',
          PROXY_RATE_PER_SERVER: '0',
          LOG_LEVEL: 'warn',
          ACTIVITY: 'off',
          QUOTA_RUNNING_TASKS_PER_ACCOUNT: String(2 * (TASKS + WARM)),
        },
      }),
      startTasksUpstream({ pollIntervalMs: POLL_MS, ttlMs: 3_600_000 }),
    ]);
    proxy = await spawnProxyProcess(system, { TASK_POLL_MAX_MS: String(POLL_MS) }, ['--expose-gc']);
    await system.setServer('modern', upstream.url);
    await system.createAgent('agent', ['modern'], 3);
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
    await system?.stop();
    await upstream?.close();
  });

  it(`holds under ${BOUND_BYTES} bytes of live heap per open task, no pool run`, async () => {
    const open = async (prefix: string, n: number): Promise<void> => {
      const outs = await inWaves(n, AT_ONCE, (k) =>
        system.call('agent', `${prefix}-${k % 50}`, 'modern__never-ends', {}, { task: true, taskWaitMs: 0 }),
      );
      for (const out of outs) expect(out.result.task?.state).toBe('working');
    };
    await open('warm', WARM);
    const before = await collected();
    expect(before.collected).toBe(true);
    await open('open', TASKS);
    const after = await collected();
    expect(upstream.stats.created).toBe(WARM + TASKS);
    // A modern task holds no pool run or connection while it is open (its run is let go once recorded).
    expect({ runs: after.runs, connections: after.connections }).toEqual({ runs: 0, connections: before.connections });
    const perTask = (after.heapUsed - before.heapUsed) / TASKS;
    expect(perTask, `${perTask.toFixed(0)} bytes of live heap per open task`).toBeLessThan(BOUND_BYTES);
  }, 600_000);
});
