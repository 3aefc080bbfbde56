import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import { cliEnvFor, runCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import type { EverythingServer } from '../servers/index.js';
import { startTaskServers } from '../support/fixtures/task-systems.js';
import type { TasksUpstream } from '../servers/tasks-upstream.js';

interface InputsList {
  inputRequests: Array<{ id: string; tool: string; requests: Array<{ key: string; message?: string }> }>;
}

/**
 * A task's questions (`input_required`) go through the input-request path (docs/tasks.md): a
 * person answers with `mcpx inputs answer`, and the task goes on with the answer. The real
 * system, server-everything's ambiguous `simulate-research-query` (2025-11-25: the question is an
 * `elicitation/create` on the `tasks/result` stream) and a modern SDK v2 server's `clarify-export`
 * (2026-07-28: `inputRequests` in `tasks/get`, answered with `tasks/update`).
 */
describe("a task's question answered by a person", { timeout: 240_000 }, () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let modern: TasksUpstream;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ system, everything, modern } = await startTaskServers({ durationMs: 1_000, pollIntervalMs: 200 }));
    await system.createAgent('researcher', ['every', 'modern'], 16);
    ({ env } = cliEnvFor(system.api, {
      MCPX_NATS_URL: serviceUrls().nats,
      MCPX_NATS_PREFIX: system.env.NATS_PREFIX ?? '',
    }));
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  /** The account's one waiting input request of `tool`, as `mcpx inputs list --json` shows it. */
  const waitingFor = (tool: string): Promise<InputsList['inputRequests'][number]> =>
    eventually(
      async () => {
        const list = await runCli(['inputs', 'list', '--json'], env);
        if (list.code !== 0) return undefined;
        return (JSON.parse(list.stdout) as InputsList).inputRequests.find((r) => r.tool === tool);
      },
      120_000,
      `an input request of ${tool}`,
    );

  it('mcpx call of the ambiguous research query waits; its question is answered with mcpx inputs answer, and the report uses the answer (2025-11-25)', async () => {
    // The CLI in its own process, bounded by the test (a loaded box may pass runCli's 60 s); the
    // call's bound leaves its tools/call time to answer on a loaded box (the task asks ~2 s in).
    const call = runCli(
      [
        'call',
        '--agent',
        'researcher',
        '--timeout-ms',
        '3000',
        'every__simulate-research-query',
        '{"topic":"python","ambiguous":true}',
      ],
      env,
      180_000,
    );
    const asked = await waitingFor('every__simulate-research-query');
    expect(asked.requests[0]?.message).toContain('could have multiple interpretations');
    // The task names the question it waits on.
    const tasks = await runCli(['tasks', 'list', '--agent', 'researcher', '--json'], env);
    const task = (
      JSON.parse(tasks.stdout) as { tasks: Array<{ state: string; inputRequestId?: string; tool: string }> }
    ).tasks.find((t) => t.inputRequestId === asked.id);
    expect(task).toMatchObject({ state: 'input_required', tool: 'every__simulate-research-query' });

    const answer = await runCli(['inputs', 'answer', asked.id, '--accept', 'interpretation=snake'], env);
    expect(answer.code, answer.stderr).toBe(0);
    const out = await call;
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toMatch(/task tsk_[a-z2-7]{24} input_required/);
    expect(out.stdout).toContain('# Research Report: python (snake)');
    expect(out.stdout).toContain('**Clarification**: snake');
    // Answered once: nothing is left waiting.
    const left = JSON.parse((await runCli(['inputs', 'list', '--json'], env)).stdout) as InputsList;
    expect(left.inputRequests.filter((r) => r.id === asked.id)).toEqual([]);
  });

  it("a modern task's question (inputRequests) is answered with mcpx inputs answer and sent with tasks/update; the task goes on with it (2026-07-28)", async () => {
    const client = new TaskClient(system.nc, system.subjects);
    const out = await system.call(
      'researcher',
      'r-clarify',
      'modern__clarify-export',
      {},
      { task: true, timeoutMs: 1_000 },
    );
    const id = out.result.task?.id;
    expect(id).toBeDefined();
    const events: TaskEvent[] = [];
    const waiting = client.waitTask(system.account, id!, { timeoutMs: 90_000, onStatus: (e) => events.push(e) });
    const asked = await waitingFor('modern__clarify-export');
    expect(asked.requests.map((r) => r.key)).toEqual(['format']);
    expect(modern.stats.updates).toBe(0);
    // The task names the question it waits on.
    expect(await client.getTask(system.account, id!)).toMatchObject({
      state: 'input_required',
      inputRequestId: asked.id,
    });
    const answer = await runCli(['inputs', 'answer', asked.id, '--accept', 'format=parquet'], env);
    expect(answer.code, answer.stderr).toBe(0);
    const ended = await waiting;
    expect(ended.state, JSON.stringify(ended)).toBe('completed');
    // The task went on from the answer, and the answer went once.
    expect(events.some((e) => e.state === 'working')).toBe(true);
    expect(modern.stats.updates).toBe(1);
    const result = await client.taskResult(system.account, id!);
    expect(result.text).toBe('export ready: parquet');
  });

  it('a question nobody answers before its task is cancelled leaves nothing waiting on the task', async () => {
    const client = new TaskClient(system.nc, system.subjects);
    const out = await system.call(
      'researcher',
      'r-cancel',
      'modern__clarify-export',
      {},
      { task: true, timeoutMs: 500 },
    );
    const id = out.result.task!.id;
    await eventually(
      async () => ((await client.getTask(system.account, id)).inputRequestId !== undefined ? true : undefined),
      30_000,
      'the question asked',
    );
    const cancelled = await client.cancelTask(system.account, id);
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.inputRequestId).toBeUndefined();
  });
});
