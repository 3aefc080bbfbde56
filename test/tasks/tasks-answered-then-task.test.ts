import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskClient } from '@mcpx/proxy-client';
import type { ProxySystem } from '../support/proxy-system.js';
import type { EverythingServer } from '../servers/index.js';
import { startTaskServers } from '../support/fixtures/task-systems.js';
import type { TasksUpstream } from '../servers/tasks-upstream.js';
import { acceptInput, askedInput } from '../inputs/input-system.js';

interface TaskList {
  tasks: Array<{ id: string; state: string; tool: string; run: string }>;
}

/**
 * A task-augmented call whose server first answers `input_required` synchronously (SEP-2322, no
 * task yet) and creates its task only once the call comes back (docs/tasks.md): the created task
 * is brokered as any (recorded, polled) and the caller gets the task's result, never the
 * created-task envelope. The real system and a modern SDK v2 server (2026-07-28 tasks extension).
 */
describe('a task created after a synchronous input round', { timeout: 240_000 }, () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let modern: TasksUpstream;

  beforeAll(async () => {
    ({ system, everything, modern } = await startTaskServers({ durationMs: 800, pollIntervalMs: 200 }));
    await system.createAgent('exporter', ['modern'], 6);
    await system.createAgent('exporter-rt', ['modern'], 6);
    await system.api.act('UpdateAgent', {
      agent: system.agentId('exporter-rt'),
      definition: { mcpServers: ['modern'], inputs: { forms: 'runtime' } },
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  const recorded = async (tool: string, run: string, agent = 'exporter'): Promise<TaskList['tasks']> =>
    (await system.api.act<TaskList>('ListTasks', { agent: system.agentId(agent) })).tasks.filter(
      (t) => t.tool === tool && t.run === run,
    );

  it("a person's answer: the re-sent call creates a task, which is recorded and polled, and the caller gets its result", async () => {
    const asked = await askedInput(
      system.call('exporter', 'x-person', 'modern__confirm-then-export', {}, { task: true, timeoutMs: 30_000 }),
    );
    expect(asked.forPerson).toBe(true);
    expect(modern.stats.created).toBe(0);
    await acceptInput(system, asked.inputRequestId, { format: 'pdf' });
    const out = await system.call(
      'exporter',
      'x-person',
      'modern__confirm-then-export',
      {},
      { task: true, timeoutMs: 30_000, inputRequestId: asked.inputRequestId },
    );
    expect(out.result.text, JSON.stringify(out.result)).toBe('export ready: pdf');
    expect(JSON.stringify(out.result)).not.toContain('resultType');
    const tasks = await recorded('modern__confirm-then-export', 'x-person');
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.state).toBe('completed');
    const view = await new TaskClient(system.nc, system.subjects).getTask(system.account, tasks[0]!.id);
    expect(view).toMatchObject({ state: 'completed', tool: 'modern__confirm-then-export' });
  });

  it("the runtime's answer: the re-sent call's task is brokered, and the runtime gets its result", async () => {
    const asked: string[] = [];
    const out = await system.client.callAwaitingInput(
      {
        account: system.account,
        agent: system.agentId('exporter-rt'),
        run: 'x-runtime',
        tool: 'modern__confirm-then-export',
        arguments: {},
        task: true,
        timeoutMs: 30_000,
        answers: { forms: true },
      },
      {
        waitMs: 60_000,
        answer: (questions) => {
          asked.push(...questions.map((q) => `${q.key}:${q.answerBy}`));
          return Promise.resolve({ confirm: { action: 'accept', content: { format: 'parquet' } } });
        },
      },
    );
    expect(asked).toEqual(['confirm:runtime']);
    expect(out.result.text, JSON.stringify(out.result)).toBe('export ready: parquet');
    const tasks = await recorded('modern__confirm-then-export', 'x-runtime', 'exporter-rt');
    expect(tasks.map((t) => t.state)).toEqual(['completed']);
  });

  it('a requestState-only round sent straight back: the task it then creates is brokered too, and the caller gets its result', async () => {
    const created = modern.stats.created;
    const out = await system.call(
      'exporter',
      'x-state',
      'modern__settle-then-export',
      {},
      {
        task: true,
        timeoutMs: 30_000,
      },
    );
    expect(out.result.text, JSON.stringify(out.result)).toBe('export ready: settled');
    expect(modern.stats.created).toBe(created + 1);
    const tasks = await recorded('modern__settle-then-export', 'x-state');
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.state).toBe('completed');
    // Polled by the broker (the result came from tasks/get), not handed back as the call's answer.
    expect([...modern.stats.gets.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});
