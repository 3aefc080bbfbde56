/**
 * Actions whose change is held outside the registry's Postgres (an input answer in Redis, a task
 * in the proxy's task service, a lambda in the projector), with Postgres lost at their audit entry
 * (the entry's insert waits behind a table lock the test holds, and its connection is terminated,
 * 57P01). The entry is written first, in a transaction that commits only once the outside store
 * holds the change: an `unavailable` answer ("nothing was written") leaves nothing changed, and
 * asked again the change is made and recorded once. Before, the change was made first and its
 * entry written after it: the answer said nothing was written with the change made and no entry.
 */
import { sql } from 'kysely';
import { createDb, type Db } from '@mcpx/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputRequestView, TaskView } from '@mcpx/contracts';
import { askedInput, pendingInputs, INPUT_TOOLS } from '../inputs/input-system.js';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { atTheAuditEntry, expectNothingWritten, postgresLoss, type PostgresLoss } from '../support/postgres-lost.js';
import { ProxySystem } from '../support/proxy-system.js';

describe('actions on outside stores with Postgres lost at their audit entry: unavailable, and nothing was changed', () => {
  let system: ProxySystem;
  let inputs: InputMcpServer;
  let tasks: TasksUpstream;
  /** The test's reads, and connections of its own for the locks. */
  let reads: Db;
  let locks: Db;
  let loss: PostgresLoss;

  beforeAll(async () => {
    [system, inputs, tasks] = await Promise.all([
      ProxySystem.start({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startInputMcpServer({ era: 'modern' }),
      startTasksUpstream({ durationMs: 60_000, pollIntervalMs: 250 }),
    ]);
    await system.setServer('ops', inputs.url);
    await system.setServer('modern', tasks.url);
    await system.createAgent('ops-agent', ['ops'], INPUT_TOOLS);
    await system.createAgent('worker', ['modern'], 6);
    reads = createDb(system.db.url, { max: 2 });
    locks = createDb(system.db.url, { max: 2 });
    loss = postgresLoss(reads, locks);
  }, 120_000);
  afterAll(async () => {
    await locks?.destroy();
    await reads?.destroy();
    await system?.stop();
    await Promise.all([inputs?.close(), tasks?.close()]);
  });

  /** The entries the log holds for `action` on `target`. */
  async function entries(action: string, target: string): Promise<unknown[]> {
    const r = await sql<{ after: unknown }>`
      SELECT after FROM registry.audit_events
      WHERE account_id = ${system.account} AND action = ${action} AND target = ${target} ORDER BY id`.execute(reads);
    return r.rows.map((x) => x.after);
  }

  it('AnswerInputRequest: the question stays unanswered, with no entry, and is answered when asked again', async () => {
    const asked = await askedInput(system.call('ops-agent', 'lost-input', 'ops__deploy', { env: 'prod' }));
    const id = asked.inputRequestId;
    const answer = (): Promise<unknown> =>
      system.api.act('AnswerInputRequest', { id, action: 'accept', content: { confirm: true } });
    const shown = async (): Promise<InputRequestView | undefined> =>
      (await pendingInputs(system)).find((r) => r.id === id);
    expectNothingWritten(await loss.withPostgresLostAt(answer, atTheAuditEntry));
    // "Nothing was written" is true: the question waits for a person, and no entry says otherwise.
    expect(await shown()).toMatchObject({ status: 'pending', answered: [] });
    expect(await entries('AnswerInputRequest', id)).toEqual([]);
    const again = (await answer()) as { inputRequest: InputRequestView };
    expect(again.inputRequest).toMatchObject({ status: 'answered', answered: ['confirm'] });
    expect(await entries('AnswerInputRequest', id)).toEqual([
      {
        action: 'accept',
        key: 'confirm',
        tool: 'ops__deploy',
        server: 'ops',
        agent: system.agentId('ops-agent'),
        run: 'lost-input',
        complete: true,
      },
    ]);
  }, 60_000);

  it('CancelTask: the task keeps working, its server is not asked, with no entry, and it is cancelled when asked again', async () => {
    const id = (await system.call('worker', 'lost-cancel', 'modern__never-ends', {}, { task: true, timeoutMs: 500 }))
      .result.task!.id;
    const cancel = (): Promise<unknown> => system.api.act('CancelTask', { task: id });
    const state = async (): Promise<string> =>
      (await system.api.act<{ task: TaskView }>('GetTask', { task: id })).task.state;
    const cancels = tasks.stats.cancels;
    expectNothingWritten(await loss.withPostgresLostAt(cancel, atTheAuditEntry));
    // "Nothing was written" is true: the task is working, and its server heard of no cancel.
    expect(await state()).toBe('working');
    expect(tasks.stats.cancels).toBe(cancels);
    expect(await entries('CancelTask', id)).toEqual([]);
    const again = (await cancel()) as { task: TaskView };
    expect(again.task.state).toBe('cancelled');
    expect(tasks.stats.cancels).toBe(cancels + 1);
    // What the entry says of the task after the cancel is what the task service answers.
    expect(again.task.error?.code).toBe('cancelled');
    expect(await entries('CancelTask', id)).toEqual([
      {
        state: 'cancelled',
        agent: system.agentId('worker'),
        server: 'modern',
        tool: 'modern__never-ends',
        run: 'lost-cancel',
        error: 'cancelled',
      },
    ]);
    // An ended task is answered as it stands, and nothing more is recorded.
    expect(((await cancel()) as { task: TaskView }).task.state).toBe('cancelled');
    expect(await entries('CancelTask', id)).toHaveLength(1);
  }, 60_000);

  it('SetLambdaTool and DeleteLambdaTool: the lambda is neither saved nor deleted, with no entry, and is when asked again', async () => {
    const agent = system.agentId('worker');
    const target = 'worker/kept_lambda';
    const lambdas = async (): Promise<string[]> =>
      (
        await sql<{ cid: string }>`
          SELECT cid FROM projector.lambda_tools
          WHERE account_id = ${system.account} AND name = 'kept_lambda'`.execute(reads)
      ).rows.map((r) => r.cid);
    const set = (): Promise<unknown> =>
      system.api.act('SetLambdaTool', {
        agent,
        name: 'kept_lambda',
        document: { description: 'Kept.', inputSchema: { type: 'object' } },
      });
    expectNothingWritten(await loss.withPostgresLostAt(set, atTheAuditEntry));
    expect(await lambdas()).toEqual([]);
    expect(await entries('SetLambdaTool', target)).toEqual([]);
    const saved = (await set()) as { cid: string };
    // The entry names the document the projector stored.
    expect(await lambdas()).toEqual([saved.cid]);
    expect(await entries('SetLambdaTool', target)).toEqual([{ cid: saved.cid }]);

    const remove = (): Promise<unknown> => system.api.act('DeleteLambdaTool', { agent, name: 'kept_lambda' });
    expectNothingWritten(await loss.withPostgresLostAt(remove, atTheAuditEntry));
    expect(await lambdas()).toEqual([saved.cid]);
    expect(await entries('DeleteLambdaTool', target)).toEqual([]);
    await remove();
    expect(await lambdas()).toEqual([]);
    expect(await entries('DeleteLambdaTool', target)).toHaveLength(1);
    // A refused change (nothing left to delete) records nothing.
    await expect(remove()).rejects.toMatchObject({ code: 'not_found' });
    expect(await entries('DeleteLambdaTool', target)).toHaveLength(1);
  }, 60_000);
});
