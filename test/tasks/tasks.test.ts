import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type TaskEvent } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import { startEverythingServer, type EverythingServer } from '../servers/index.js';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

interface ToolDoc {
  name: string;
  taskSupport?: string;
}

/**
 * Brokered tasks through the real system (registry, projector, proxy on NATS, Postgres, Redis)
 * against real servers: server-everything's `simulate-research-query` (2025-11-25 tasks, on the
 * SDK v1) and a modern SDK v2 server speaking the 2026-07-28 tasks extension.
 */
describe('task-augmented calls, brokered', () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let modern: TasksUpstream;
  let shortLived: TasksUpstream;
  let tasks: TaskClient;

  beforeAll(async () => {
    [system, everything, modern, shortLived] = await Promise.all([
      ProxySystem.start({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startEverythingServer('streamableHttp'),
      startTasksUpstream({ durationMs: 4_000, pollIntervalMs: 250 }),
      startTasksUpstream({ durationMs: 4_000, pollIntervalMs: 250, ttlMs: 2_500 }),
    ]);
    await system.setServer('every', everything.url);
    await system.setServer('modern', modern.url);
    await system.setServer('short', shortLived.url);
    await system.createAgent('agent', ['every', 'modern', 'short'], 16);
    tasks = new TaskClient(system.nc, system.subjects);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([everything?.close(), modern?.close(), shortLived?.close()]);
  });

  const toolsOf = async (): Promise<ToolDoc[]> =>
    (await system.api.act<{ tools: ToolDoc[] }>('ListAgentTools', { agent: system.agentId('agent') })).tools;

  it("keeps each tool's task support on its document: required (2025-11-25), optional (the 2026-07-28 extension), none", async () => {
    const tools = await toolsOf();
    const by = new Map(tools.map((t) => [t.name, t]));
    expect(by.get('every__simulate-research-query')?.taskSupport).toBe('required');
    expect(by.get('every__echo')?.taskSupport).toBeUndefined();
    expect(by.get('modern__long-export')?.taskSupport).toBe('optional');
  });

  it("a required tool's call is task-augmented and answers with the report when the task ends within the call bound (2025-11-25)", async () => {
    const out = await system.call('agent', 'r-research', 'every__simulate-research-query', { topic: 'tides' });
    expect(out.result.task).toBeUndefined();
    expect(out.result.text).toContain('# Research Report: tides');
    expect(out.result.text).toContain('Stage 4: Generating report');
  });

  it('an optional tool runs as a plain call unless the caller asks for a task', async () => {
    const before = modern.stats.created;
    const plain = await system.call('agent', 'r-plain', 'modern__long-export', { format: 'csv' });
    expect(plain.result.text).toBe('long-export ran at once');
    expect(modern.stats.created).toBe(before);
  });

  it('a task that outlives the call bound answers with its handle; status events reach waitTask; the result is taken once it ended (2026-07-28)', async () => {
    const out = await system.call(
      'agent',
      'r-long',
      'modern__long-export',
      { format: 'pdf' },
      { task: true, timeoutMs: 1_000 },
    );
    const handle = out.result.task;
    expect(handle?.id).toMatch(/^tsk_[a-z2-7]{24}$/);
    expect(handle?.state).toBe('working');
    const id = handle!.id;
    // Recorded before the handle came back.
    const view = await tasks.getTask(system.account, id);
    expect(view).toMatchObject({ id, tool: 'modern__long-export', server: 'modern', dialect: '2026-07-28' });
    await expect(tasks.taskResult(system.account, id)).rejects.toMatchObject({ code: 'conflict' });
    const seen: TaskEvent[] = [];
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 30_000, onStatus: (e) => seen.push(e) });
    expect(ended.state).toBe('completed');
    expect(ended.resultReady).toBe(true);
    expect(seen.at(-1)?.state).toBe('completed');
    expect(seen.some((e) => e.statusMessage?.startsWith('exporting'))).toBe(true);
    const result = await tasks.taskResult(system.account, id);
    expect(result.text).toBe('export ready: pdf');
    expect(result.result).toEqual({ format: 'pdf', rows: 42 });
    // At most one tasks/get per poll interval (250 ms) over the task's life, give or take the jitter.
    const gets = [...modern.stats.gets.values()].at(-1) ?? 0;
    expect(gets).toBeGreaterThan(2);
    expect(gets).toBeLessThanOrEqual(Math.ceil(4_000 / 225) + 4);
  });

  it('another account cannot read, cancel or take a task', async () => {
    const out = await system.call('agent', 'r-other', 'modern__never-ends', {}, { task: true, timeoutMs: 500 });
    const id = out.result.task!.id;
    const other = 'acct-not-the-owner';
    await expect(tasks.getTask(other, id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(tasks.cancelTask(other, id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(tasks.taskResult(other, id)).rejects.toMatchObject({ code: 'not_found' });
    await tasks.cancelTask(system.account, id);
  });

  it('cancelTask asks the server and ends the task cancelled; its result is the typed cancel', async () => {
    const out = await system.call('agent', 'r-cancel', 'modern__never-ends', {}, { task: true, timeoutMs: 500 });
    const id = out.result.task!.id;
    const cancels = modern.stats.cancels;
    const view = await tasks.cancelTask(system.account, id);
    expect(view.state).toBe('cancelled');
    expect(modern.stats.cancels).toBe(cancels + 1);
    const err = await tasks.taskResult(system.account, id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('cancelled');
  });

  it('a task its server forgot (a restart) ends failed with task_lost, never hangs', async () => {
    const out = await system.call('agent', 'r-lost', 'modern__never-ends', {}, { task: true, timeoutMs: 500 });
    const id = out.result.task!.id;
    modern.forget();
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 30_000 });
    expect(ended.state).toBe('failed');
    expect(ended.error?.code).toBe('task_lost');
    await expect(tasks.taskResult(system.account, id)).rejects.toMatchObject({
      code: 'server_error',
      details: { reason: 'task_lost' },
    });
  });

  it('a task that never finishes ends expired at its ttl', async () => {
    const out = await system.call('agent', 'r-ttl', 'short__never-ends', {}, { task: true, timeoutMs: 500 });
    const id = out.result.task!.id;
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 30_000 });
    expect(ended.state).toBe('expired');
    await expect(tasks.taskResult(system.account, id)).rejects.toMatchObject({
      code: 'timeout',
      details: { reason: 'task_expired' },
    });
  });

  it('lists the agent’s tasks, newest first, without results or credentials', async () => {
    const list = await tasks.listTasks(system.account, { agent: system.agentId('agent') });
    expect(list.length).toBeGreaterThanOrEqual(4);
    expect(list.map((t) => t.createdAt)).toEqual([...list.map((t) => t.createdAt)].sort().reverse());
    expect(JSON.stringify(list)).not.toContain('authorization');
  });

  it('a task is polled by one instance at a time; when its poller stops, another takes it over and the result reaches the runtime once', async () => {
    const second = await system.addProxy({ TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' });
    const out = await system.call(
      'agent',
      'r-takeover',
      'modern__long-export',
      { format: 'xlsx' },
      { task: true, timeoutMs: 500 },
    );
    const id = out.result.task!.id;
    const creator = system.proxies.find((p) => p.instance === out.instance);
    expect(creator).toBeDefined();
    // The creating instance stops (its lease is not renewed): the other finishes the task.
    await creator!.stop();
    const events: TaskEvent[] = [];
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 30_000, onStatus: (e) => events.push(e) });
    expect(ended.state).toBe('completed');
    expect(events.filter((e) => e.state === 'completed')).toHaveLength(1);
    expect((await tasks.taskResult(system.account, id)).text).toBe('export ready: xlsx');
    await eventually(async () => (second !== undefined ? true : undefined), 1_000);
  });
});
