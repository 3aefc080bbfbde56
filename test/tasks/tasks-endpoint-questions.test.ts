import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS_EXTENSION, type TasksUpstream } from '../servers/tasks-upstream.js';
import type { EndpointSystem } from '../endpoint/endpoint-harness.js';
import { startEndpointTasks } from '../support/fixtures/task-systems.js';
import { MODERN_VERSION, post, type RpcAnswer } from '../endpoint/raw-mcp.js';
import { eventually } from '../support/system.js';

type Json = Record<string, unknown>;

/**
 * A task's questions asked of the agent endpoint's 2026-07-28 client that asked for the task
 * (docs/tasks.md#questions): `tasks/get` says `input_required` with the questions the client
 * declared it answers (`elicitation` forms) in `inputRequests`, the client answers with
 * `tasks/update`, acknowledged with `{resultType: "complete"}`, and the task goes on upstream with
 * the answer. Bound to the token: another token of the same agent cannot see or answer the round
 * (tested as the attack), and an answer that does not fit its question is -32602 naming it.
 */
describe("endpoint: a task's questions asked of its 2026-07-28 client", { timeout: 240_000 }, () => {
  let sys: EndpointSystem;
  let modern: TasksUpstream;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    ({ sys, modern, tokenA, tokenB } = await startEndpointTasks('asker', { durationMs: 1_000, pollIntervalMs: 200 }));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await modern?.close();
  });

  let id = 1;
  /** A 2026-07-28 request declaring the tasks extension and form elicitation, on the raw wire. */
  const request = (token: string, method: string, params: Json): Promise<RpcAnswer> =>
    post(
      sys.urlOf('asker'),
      token,
      {
        jsonrpc: '2.0',
        id: id++,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
            'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } },
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          },
        },
      },
      {
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': method,
        'mcp-name': String(params.taskId ?? params.name),
      },
    );

  const asked = (token: string, taskId: string): Promise<Json> =>
    eventually(
      async () => {
        const got = await request(token, 'tasks/get', { taskId });
        return got.result?.status === 'input_required' ? got.result : undefined;
      },
      60_000,
      'the task asks its client',
    );

  it('tasks/get shows the question, tasks/update answers it (acked complete), and the task completes with the answer; another token can neither see nor answer it', async () => {
    const created = await request(tokenA, 'tools/call', { name: 'modern__clarify-export', arguments: {} });
    expect(created.result, created.body).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.result!.taskId as string;
    const round = await asked(tokenA, taskId);
    expect(round.inputRequests).toMatchObject({
      format: {
        method: 'elicitation/create',
        params: { mode: 'form', message: 'Which format should the export have?' },
      },
    });
    expect(round).not.toHaveProperty('requestState');

    // The attack: another token of the same agent, with the right task id and answer.
    const foreignGet = await request(tokenB, 'tasks/get', { taskId });
    expect(foreignGet.message?.error?.code).toBe(-32602);
    const foreignUpdate = await request(tokenB, 'tasks/update', {
      taskId,
      inputResponses: { format: { action: 'accept', content: { format: 'pdf' } } },
    });
    expect(foreignUpdate.message?.error?.code).toBe(-32602);
    expect(foreignUpdate.body).not.toContain('format');

    // An answer outside the question's schema: -32602 naming it, and the round stays open.
    const bad = await request(tokenA, 'tasks/update', {
      taskId,
      inputResponses: { format: { action: 'accept', content: { format: 'xml' } } },
    });
    expect(bad.message?.error?.code, bad.body).toBe(-32602);
    expect(JSON.stringify(bad.message?.error)).toContain('inputResponses.format');
    expect((await request(tokenA, 'tasks/get', { taskId })).result?.status).toBe('input_required');
    expect(modern.stats.updates).toBe(0);

    const ack = await request(tokenA, 'tasks/update', {
      taskId,
      inputResponses: { format: { action: 'accept', content: { format: 'parquet' } } },
    });
    expect(ack.result, ack.body).toMatchObject({ resultType: 'complete' });
    expect(Object.keys(ack.result!).filter((k) => k !== '_meta')).toEqual(['resultType']);
    const done = await eventually(
      async () => {
        const got = await request(tokenA, 'tasks/get', { taskId });
        return got.result?.status === 'completed' ? got.result : undefined;
      },
      60_000,
      'the task completed',
    );
    expect(done.result).toMatchObject({ content: [{ type: 'text', text: 'export ready: parquet' }] });
    expect(modern.stats.updates).toBe(1);
    // No person was asked: the account has nothing waiting.
    const pending = await sys.system.api.act<{ inputRequests: unknown[] }>('ListInputRequests', {});
    expect(pending.inputRequests).toEqual([]);
  });
});
