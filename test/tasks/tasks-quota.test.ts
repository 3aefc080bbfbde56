import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskClient } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem } from '../support/proxy-system.js';

/** QUOTA_RUNNING_TASKS_PER_ACCOUNT: one task past the cap is refused before anything is sent (docs/tasks.md#bounds). */
describe('the running-tasks quota', () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { QUOTA_RUNNING_TASKS_PER_ACCOUNT: '2' } }),
      startTasksUpstream({ pollIntervalMs: 500 }),
    ]);
    await system.setServer('modern', upstream.url);
    await system.createAgent('agent', ['modern'], 3);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('refuses a third open task with quota_exceeded, sends nothing, and admits one again once a task ended', async () => {
    const tasks = new TaskClient(system.nc, system.subjects);
    const open = async (run: string): Promise<string> =>
      (await system.call('agent', run, 'modern__never-ends', {}, { task: true, timeoutMs: 300 })).result.task!.id;
    const first = await open('q1');
    await open('q2');
    const calls = upstream.stats.calls;
    const refused = await system.callError('agent', 'q3', 'modern__never-ends', {}, { task: true, timeoutMs: 300 });
    expect(refused.code).toBe('quota_exceeded');
    expect(refused.details).toMatchObject({ limit: 'running_tasks_per_account', max: 2 });
    expect(upstream.stats.calls).toBe(calls);
    // A plain call is no task: the cap does not apply.
    expect((await system.call('agent', 'q4', 'modern__quick', {})).result.text).toBe('quick ran at once');
    await tasks.cancelTask(system.account, first);
    expect(
      (await system.call('agent', 'q5', 'modern__never-ends', {}, { task: true, timeoutMs: 300 })).result.task?.state,
    ).toBe('working');
  });
});
