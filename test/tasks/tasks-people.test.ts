import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskClient } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ApiClient } from '../support/api-client.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

interface TaskView {
  id: string;
  agent: string;
  state: string;
  tool: string;
}
interface AuditEvent {
  action: string;
  signer: string;
  target: { kind: string; name: string };
  after?: Record<string, unknown>;
}

/**
 * Tasks for people through the signed API (docs/tasks.md#people): ListTasks, GetTask and
 * CancelTask ask the proxy's task service for the signer's account only, and the audit log
 * records each task's creation, its cancellation (the signer's act and the task's end) and its
 * expiry, heard from the proxies' task events. Real registry, projector and proxy on NATS and
 * Postgres, against a modern server speaking the 2026-07-28 tasks extension.
 */
describe('tasks for people: signed actions and the audit log', () => {
  let system: ProxySystem;
  let modern: TasksUpstream;
  let short: TasksUpstream;

  beforeAll(async () => {
    [system, modern, short] = await Promise.all([
      ProxySystem.start({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startTasksUpstream({ durationMs: 60_000, pollIntervalMs: 250 }),
      startTasksUpstream({ durationMs: 60_000, pollIntervalMs: 250, ttlMs: 1_500 }),
    ]);
    await system.setServer('modern', modern.url);
    await system.setServer('short', short.url);
    await system.createAgent('worker', ['modern', 'short'], 6);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([modern?.close(), short?.close()]);
  });

  const startTask = async (tool: string, run: string): Promise<string> =>
    (await system.call('worker', run, tool, {}, { task: true, timeoutMs: 500 })).result.task!.id;
  const audit = async (task: string): Promise<AuditEvent[]> =>
    (await system.api.act<{ events: AuditEvent[] }>('ListAuditEvents', { targetKind: 'task', target: task })).events;

  it('ListTasks (per agent), GetTask and CancelTask, for the signer’s account; the cancel is audited with the signer, the task’s life by the proxies’ events', async () => {
    const id = await startTask('modern__never-ends', 'people-1');
    const { tasks } = await system.api.act<{ tasks: TaskView[] }>('ListTasks', { agent: 'worker' });
    expect(tasks.map((t) => t.id)).toContain(id);
    expect(JSON.stringify(tasks)).not.toMatch(/authorization|arguments/i);
    const { task } = await system.api.act<{ task: TaskView }>('GetTask', { task: id });
    expect(task).toMatchObject({ id, state: 'working', tool: 'modern__never-ends', agent: system.agentId('worker') });
    const cancels = modern.stats.cancels;
    const cancelled = await system.api.act<{ task: TaskView }>('CancelTask', { task: id });
    expect(cancelled.task.state).toBe('cancelled');
    expect(modern.stats.cancels).toBe(cancels + 1);
    // Cancelling again answers the task as it stands and records nothing more.
    expect((await system.api.act<{ task: TaskView }>('CancelTask', { task: id })).task.state).toBe('cancelled');
    await eventually(async () => {
      const events = await audit(id);
      expect(events.map((e) => e.action).sort()).toEqual(['CancelTask', 'TaskCancelled', 'TaskCreated']);
      return true;
    }, 15_000);
    const events = await audit(id);
    expect(events.find((e) => e.action === 'CancelTask')).toMatchObject({
      signer: system.api.key.principal,
      after: { state: 'cancelled', tool: 'modern__never-ends' },
    });
    expect(events.find((e) => e.action === 'TaskCreated')).toMatchObject({
      signer: 'proxy',
      after: { run: 'people-1', server: 'modern' },
    });
  });

  it('a task that outlives its ttl is audited as expired', async () => {
    const id = await startTask('short__never-ends', 'people-2');
    await new TaskClient(system.nc, system.subjects).waitTask(system.account, id, { timeoutMs: 30_000 });
    await eventually(async () => {
      expect((await audit(id)).map((e) => e.action).sort()).toEqual(['TaskCreated', 'TaskExpired']);
      return true;
    }, 15_000);
  });

  it('another account sees none of the tasks and cannot cancel one; bad fields are refused by name', async () => {
    const id = await startTask('modern__never-ends', 'people-3');
    const other = new ApiClient(system.api.apiUrl);
    expect((await other.act<{ tasks: TaskView[] }>('ListTasks')).tasks).toEqual([]);
    await expect(other.act('GetTask', { task: id })).rejects.toMatchObject({ code: 'not_found' });
    await expect(other.act('CancelTask', { task: id })).rejects.toMatchObject({ code: 'not_found' });
    expect((await system.api.act<{ task: TaskView }>('GetTask', { task: id })).task.state).toBe('working');
    await expect(system.api.act('GetTask', { task: 'not-a-task' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'task' },
    });
    await expect(system.api.act('ListTasks', { limit: 0 })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'limit' },
    });
    await expect(system.api.act('ListTasks', { agent: 'no-such-agent' })).rejects.toMatchObject({ code: 'not_found' });
    await system.api.act('CancelTask', { task: id });
  });
});
