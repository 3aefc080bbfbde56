import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, WireError, type InputRequestItem } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import { cliEnvFor, runCli } from '../support/cli.js';
import { serviceUrls } from '../support/env.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import type { EverythingServer } from '../servers/index.js';
import { startTaskServers } from '../support/fixtures/task-systems.js';
import type { TasksUpstream } from '../servers/tasks-upstream.js';

/**
 * A task's question answered by the runtime that made the call (docs/tasks.md#questions): a call
 * that declared it answers forms (`answers.forms`), of an agent that lets its runtime answer them
 * (`inputs.forms: "runtime"`), has its task's form questions addressed to the runtime; `waitTask`
 * hears the round and answers it with its `answer` handler, and the task goes on upstream. No
 * person is asked. The real system, server-everything's ambiguous `simulate-research-query`
 * (2025-11-25) and a modern SDK v2 server's `clarify-export` (2026-07-28).
 */
describe("a task's question answered by the runtime", { timeout: 240_000 }, () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let modern: TasksUpstream;
  let env: Record<string, string>;
  let agent: string;
  let tasks: TaskClient;

  beforeAll(async () => {
    ({ system, everything, modern } = await startTaskServers({ durationMs: 1_000, pollIntervalMs: 200 }));
    ({ agent } = await system.api
      .act<{ agent: { id: string } }>('CreateAgent', {
        name: 'answerer',
        definition: { mcpServers: ['every', 'modern'], inputs: { forms: 'runtime' } },
      })
      .then((r) => ({ agent: r.agent.id })));
    await eventually(
      async () => {
        const t = await system.api.act<{ tools: unknown[] }>('ListAgentTools', { agent });
        return t.tools.length >= 16 ? true : undefined;
      },
      30_000,
      'tools projected',
    );
    ({ env } = cliEnvFor(system.api, {
      MCPX_NATS_URL: serviceUrls().nats,
      MCPX_NATS_PREFIX: system.env.NATS_PREFIX ?? '',
    }));
    tasks = new TaskClient(system.nc, system.subjects);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  /** The account's input requests waiting for a person. */
  const waitingForPeople = async (): Promise<unknown[]> => {
    const list = await runCli(['inputs', 'list', '--json'], env);
    expect(list.code, list.stderr).toBe(0);
    return (JSON.parse(list.stdout) as { inputRequests: unknown[] }).inputRequests;
  };

  it("a modern task's question goes to the runtime's waitTask, whose answer goes upstream with tasks/update (2026-07-28)", async () => {
    const out = await system.call(
      agent,
      'r-modern',
      'modern__clarify-export',
      {},
      { task: true, timeoutMs: 3_000, answers: { forms: true, tasks: true } },
    );
    const id = out.result.task!.id;
    const asked: InputRequestItem[][] = [];
    const ended = await tasks.waitTask(system.account, id, {
      timeoutMs: 90_000,
      answer: async (questions) => {
        asked.push(questions);
        return { format: { action: 'accept', content: { format: 'parquet' } } };
      },
    });
    expect(ended.state, JSON.stringify(ended)).toBe('completed');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject([{ key: 'format', kind: 'form', answerBy: 'runtime' }]);
    expect(modern.stats.updates).toBe(1);
    expect((await tasks.taskResult(system.account, id)).text).toBe('export ready: parquet');
    // Nobody else was asked.
    expect(await waitingForPeople()).toEqual([]);
  });

  it('the ambiguous research query asks the runtime, and the report uses its answer (2025-11-25)', async () => {
    const out = await system.call(
      agent,
      'r-legacy',
      'every__simulate-research-query',
      { topic: 'python', ambiguous: true },
      // The call's bound leaves its tools/call time on a loaded box (the task asks ~2 s in).
      { timeoutMs: 3_000, answers: { forms: true, tasks: true } },
    );
    const id = out.result.task!.id;
    let message = '';
    const ended = await tasks.waitTask(system.account, id, {
      timeoutMs: 150_000,
      answer: async (questions) => {
        const q = questions[0]!;
        message = q.kind === 'form' ? q.message : '';
        return { [q.key]: { action: 'accept', content: { interpretation: 'snake' } } };
      },
    });
    expect(ended.state, JSON.stringify(ended)).toBe('completed');
    expect(message).toContain('could have multiple interpretations');
    const result = await tasks.taskResult(system.account, id);
    expect(result.text).toContain('# Research Report: python (snake)');
    expect(await waitingForPeople()).toEqual([]);
  });

  it('an answer that does not fit its question, or names another round, is refused; the round stays open for a good one', async () => {
    const out = await system.call(
      agent,
      'r-bad',
      'modern__clarify-export',
      {},
      { task: true, timeoutMs: 3_000, answers: { forms: true, tasks: true } },
    );
    const id = out.result.task!.id;
    const updates = modern.stats.updates;
    const round = await eventually(
      async () => tasks.taskQuestions(system.account, id).catch(() => undefined),
      60_000,
      'the question asked',
    );
    expect(round.requests).toMatchObject([{ key: 'format', answerBy: 'runtime' }]);
    const refusal = async (p: Promise<unknown>): Promise<WireError> => {
      try {
        await p;
      } catch (err) {
        if (err instanceof WireError) return err;
        throw err;
      }
      throw new Error('the answer was taken');
    };
    const outside = await refusal(
      tasks.answerTask(system.account, id, round.inputRequestId, {
        format: { action: 'accept', content: { format: 'xml' } },
      }),
    );
    expect(outside.code).toBe(ErrorCodes.invalidInput);
    expect(outside.details.field).toMatch(/^inputResponses\.format/);
    const unasked = await refusal(
      tasks.answerTask(system.account, id, round.inputRequestId, { other: { action: 'accept', content: {} } }),
    );
    expect(unasked.code).toBe(ErrorCodes.invalidInput);
    expect(unasked.details.field).toBe('inputResponses.other');
    const another = await refusal(
      tasks.answerTask(system.account, id, 'inp_notthisround', { format: { action: 'cancel' } }),
    );
    expect(another.code).toBe(ErrorCodes.conflict);
    // Another account's runtime sees no such task.
    const foreign = await refusal(
      tasks.answerTask('acct_other', id, round.inputRequestId, { format: { action: 'cancel' } }),
    );
    expect(foreign.code).toBe(ErrorCodes.notFound);
    expect(modern.stats.updates).toBe(updates);
    // The good answer still goes through, once.
    const done = await tasks.answerTask(system.account, id, round.inputRequestId, {
      format: { action: 'accept', content: { format: 'csv' } },
    });
    expect(done.complete).toBe(true);
    const ended = await tasks.waitTask(system.account, id, { timeoutMs: 60_000 });
    expect(ended.state).toBe('completed');
    expect((await tasks.taskResult(system.account, id)).text).toBe('export ready: csv');
    expect(modern.stats.updates).toBe(updates + 1);
  });
});
