import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';

/**
 * A modern long task survives `kill -9` of the proxy process that polled it: another proxy
 * process takes the task over once the lease lapses, finishes it, and its result reaches the
 * runtime once. While it is open, the task holds no pool run of the proxy.
 */
describe('a task whose polling proxy is killed', () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let procs: ProxyProcess[] = [];

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTasksUpstream({ durationMs: 6_000, pollIntervalMs: 300 }),
    ]);
    const env = { TASK_LEASE_MS: '2000', TASK_POLL_MIN_MS: '100', LOG_LEVEL: 'warn' };
    procs = await Promise.all([spawnProxyProcess(system, env), spawnProxyProcess(system, env)]);
    await system.setServer('modern', upstream.url);
    await system.createAgent('agent', ['modern'], 3);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system?.stop();
    await upstream?.close();
  });

  it('kill -9 of the poller: the other process finishes the task, one completed event, the result once', async () => {
    const tasks = new TaskClient(system.nc, system.subjects);
    const out = await system.call(
      'agent',
      'r-kill',
      'modern__long-export',
      { format: 'parquet' },
      { task: true, timeoutMs: 1_000 },
    );
    const id = out.result.task?.id;
    expect(id).toBeDefined();
    const poller = procs.find((p) => p.instance === out.instance);
    expect(poller).toBeDefined();
    // An open modern task holds no pool run or connection (docs/tasks.md#the-broker): the call went
    // out on the task's run, let go once the task was recorded (before, it stayed until the end).
    const stats = (await (await fetch(`${poller!.internalUrl}/stats`)).json()) as { runs: number; connections: number };
    expect({ runs: stats.runs, connections: stats.connections }).toEqual({ runs: 0, connections: 0 });
    const events: TaskEvent[] = [];
    const waiting = tasks.waitTask(system.account, id!, { timeoutMs: 60_000, onStatus: (e) => events.push(e) });
    await poller!.kill();
    const ended = await waiting;
    expect(ended.state).toBe('completed');
    expect(events.filter((e) => e.state === 'completed')).toHaveLength(1);
    const result = await tasks.taskResult(system.account, id!);
    expect(result.text).toBe('export ready: parquet');
    expect(upstream.stats.created).toBe(1);
  });
});
