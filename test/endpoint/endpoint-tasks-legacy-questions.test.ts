import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { TaskClient } from '@mcpx/proxy-client';
import type { EverythingServer } from '../servers/index.js';
import { startEndpointEverything } from '../support/fixtures/task-systems.js';
import type { EndpointSystem } from './endpoint-harness.js';
import { post } from './raw-mcp.js';

const TASK_ID = /^tsk_[a-z2-7]{24}$/;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const LEGACY = { 'mcp-protocol-version': '2025-11-25' };
type Json = Record<string, unknown>;

interface Streamed {
  type: string;
  task?: { taskId: string; status: string; statusMessage?: string };
  result?: { content?: Array<{ type: string; text?: string }> };
  error?: unknown;
}

/**
 * A 2025-11-25 endpoint client's task questions (docs/tasks.md#questions): an SDK v1 client that
 * declared elicitation and asked for a task of server-everything's ambiguous
 * `simulate-research-query` sees the task `input_required` on `tasks/get`, takes it with
 * `tasks/result`, on whose stream the server's question comes as an `elicitation/create` related
 * to the task; its answer goes to the task, and the report uses it. A client that declared no
 * elicitation is asked nothing: the question is the account owner's, as before. Another token's
 * `tasks/result` of the task is "Task not found".
 */
describe('endpoint: a 2025 client answers its task’s questions on tasks/result', { timeout: 180_000 }, () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    ({ sys, everything, tokenA, tokenB } = await startEndpointEverything('asker'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await everything?.close();
  });

  async function v1Client(token: string, asked: Json[], elicitation: boolean, url = sys.urlOf('asker')) {
    const client = new V1Client(
      { name: 'v1-task-questions', version: '1.0.0' },
      { capabilities: { ...(elicitation ? { elicitation: {} } : {}), tasks: { list: {}, cancel: {} } } },
    );
    if (elicitation)
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params);
        return Promise.resolve({ action: 'accept' as const, content: { interpretation: 'snake' } });
      });
    await client.connect(
      new V1Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    return client;
  }

  for (const face of [undefined, 'every']) {
    it(`the question comes on tasks/result, related to the task, and the report uses the answer (${face ?? 'merged'} face)`, async () => {
      const asked: Json[] = [];
      const url = face === undefined ? sys.urlOf('asker') : `${sys.endpoint.url}/v1/agents/asker/servers/${face}/mcp`;
      const client = await v1Client(tokenA, asked, true, url);
      const name = face === undefined ? 'every__simulate-research-query' : 'simulate-research-query';
      try {
        const seen: Streamed[] = [];
        for await (const message of client.experimental.tasks.callToolStream(
          { name, arguments: { topic: 'python', ambiguous: true } },
          undefined,
          { task: { ttl: 120_000 } },
        ))
          seen.push(message as Streamed);
        const taskId = seen[0]?.task?.taskId;
        expect(seen[0]?.type).toBe('taskCreated');
        expect(taskId).toMatch(TASK_ID);
        // tasks/get said input_required (the client then took the task with tasks/result).
        expect(seen.some((m) => m.type === 'taskStatus' && m.task?.status === 'input_required')).toBe(true);
        expect(asked).toHaveLength(1);
        expect(asked[0]).toMatchObject({
          message: expect.stringContaining('python'),
          requestedSchema: { properties: { interpretation: expect.any(Object) } },
          _meta: { [RELATED_TASK]: { taskId } },
        });
        const last = seen.at(-1);
        expect(last?.type).toBe('result');
        const text = last?.result?.content?.[0]?.text ?? '';
        expect(text).toContain('# Research Report: python (snake)');
        expect(text).toContain('**Clarification**: snake');
      } finally {
        await client.close();
      }
    });
  }

  it('a client that declared no elicitation is asked nothing: the question is the owner’s (tasks/get says working)', async () => {
    const asked: Json[] = [];
    const client = await v1Client(tokenA, asked, false);
    const tasks = new TaskClient(sys.system.nc, sys.system.subjects);
    try {
      const stream = client.experimental.tasks.callToolStream(
        { name: 'every__simulate-research-query', arguments: { topic: 'reefs', ambiguous: true } },
        undefined,
        { task: { ttl: 120_000 } },
      );
      const first = (await stream.next()).value as Streamed;
      const taskId = first.task?.taskId as string;
      expect(taskId).toMatch(TASK_ID);
      // The round the task asks (the server asks ~2 s in): its question is not the client's.
      let round: Awaited<ReturnType<TaskClient['taskQuestions']>> | undefined;
      for (let i = 0; i < 600 && round === undefined; i++) {
        round = await tasks.taskQuestions(sys.system.account, taskId).catch(() => undefined);
        if (round === undefined) await new Promise((r) => setTimeout(r, 100));
      }
      expect(round?.requests.map((q) => q.answerBy)).not.toContain('runtime');
      const got = await post(
        sys.urlOf('asker'),
        tokenA,
        { jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId } },
        LEGACY,
      );
      expect(got.message?.result?.status).toBe('working');
      // Another token's tasks/result of it: not found, asked nothing.
      const foreign = await post(
        sys.urlOf('asker'),
        tokenB,
        { jsonrpc: '2.0', id: 9, method: 'tasks/result', params: { taskId } },
        LEGACY,
      );
      expect(foreign.message?.error).toMatchObject({ code: -32602, message: 'Task not found' });
      await tasks.cancelTask(sys.system.account, taskId);
      expect(asked).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
