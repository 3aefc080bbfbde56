import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { startEverythingServer, type EverythingServer } from '../servers/index.js';
import { startTasksUpstream, TASKS_EXTENSION, type TasksUpstream } from '../servers/tasks-upstream.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { MODERN_VERSION, post, modernTaskRequest as rawTaskRequest } from './raw-mcp.js';

const TASK_ID = /^tsk_[a-z2-7]{24}$/;
const anyResult = z.looseObject({});
type Json = Record<string, unknown>;

/**
 * Task-augmented calls through the agent endpoint (docs/endpoint.md#tasks), on both faces, with
 * the SDKs' clients: the v1 client's experimental tasks (2025-11-25) against server-everything's
 * `simulate-research-query`, the v2 client declaring the 2026-07-28 tasks extension against the
 * modern task server. Each task is bound to the token that made it: another token of the same
 * agent cannot read, wait for, take or cancel it (tested as the attack).
 */
describe('endpoint: tasks for the clients that declare them', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TasksUpstream;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    [sys, everything, modern] = await Promise.all([
      startEndpointSystem({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startEverythingServer('streamableHttp'),
      startTasksUpstream({ durationMs: 2_500, pollIntervalMs: 250 }),
    ]);
    await sys.system.setServer('every', everything.url);
    await sys.system.setServer('modern', modern.url);
    await sys.system.createAgent('tasker', ['every', 'modern'], 16);
    tokenA = (await sys.token('tasker')).token;
    tokenB = (await sys.token('tasker')).token;
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  const faceUrl = (server?: string): string =>
    server === undefined ? sys.urlOf('tasker') : `${sys.endpoint.url}/v1/agents/tasker/servers/${server}/mcp`;

  async function v1Client(token: string, server?: string): Promise<V1Client> {
    const client = new V1Client(
      { name: 'v1-tasks', version: '1.0.0' },
      { capabilities: { tasks: { list: {}, cancel: {} } } },
    );
    await client.connect(
      new V1Transport(new URL(faceUrl(server)), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    return client;
  }

  async function v2Client(token: string, server?: string): Promise<Client> {
    const client = new Client(
      { name: 'v2-tasks', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(faceUrl(server)), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  }

  /** A 2025-11-25 task request on the raw wire, as any client of the token may send it. */
  const legacyTaskRequest = (token: string, method: string, params: Json) =>
    post(faceUrl(), token, { jsonrpc: '2.0', id: 1, method, params }, { 'mcp-protocol-version': '2025-11-25' });

  /** A 2026-07-28 task request on the raw wire, to the merged face or a server's. */
  const modernTaskRequest = (token: string, method: string, params: Json, server?: string) =>
    rawTaskRequest(faceUrl(server), token, method, params);

  it('declares tasks (2025 capability, 2026 extension) and lists a task tool with its task support to a 2025 client', async () => {
    const client = await v1Client(tokenA);
    try {
      expect(client.getServerCapabilities()?.tasks).toMatchObject({
        list: {},
        cancel: {},
        requests: { tools: { call: {} } },
      });
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'every__simulate-research-query')?.execution).toEqual({
        taskSupport: 'required',
      });
      expect(tools.find((t) => t.name === 'every__echo')?.execution).toBeUndefined();
    } finally {
      await client.close();
    }
    const discovered = await modernTaskRequest(tokenA, 'server/discover', {});
    expect((discovered.result?.capabilities as Json | undefined)?.extensions).toMatchObject({ [TASKS_EXTENSION]: {} });
  });

  for (const face of [undefined, 'every']) {
    it(`SDK v1 experimental tasks: simulate-research-query is created as a task, polled and its report taken (${face === undefined ? 'merged' : 'per-server'} face)`, async () => {
      const client = await v1Client(tokenA, face);
      try {
        const name = face === undefined ? 'every__simulate-research-query' : 'simulate-research-query';
        const seen: Array<{
          type: string;
          task?: { taskId: string; status: string };
          result?: { content?: Array<{ type: string; text?: string }> };
        }> = [];
        for await (const message of client.experimental.tasks.callToolStream(
          { name, arguments: { topic: 'tides' } },
          undefined,
          { task: { ttl: 60_000 } },
        ))
          seen.push(message as never);
        expect(seen[0]?.type).toBe('taskCreated');
        expect(seen[0]?.task?.taskId).toMatch(TASK_ID);
        const last = seen.at(-1);
        expect(last?.type).toBe('result');
        expect(last?.result?.content?.[0]?.text).toContain('# Research Report: tides');
      } finally {
        await client.close();
      }
    });
  }

  for (const face of [undefined, 'modern']) {
    it(`2026-07-28 tasks extension: long-export answers a created task; the SDK v2 client's tasks/get reports it and carries the result once completed (${face === undefined ? 'merged' : 'per-server'} face)`, async () => {
      const name = face === undefined ? 'modern__long-export' : 'long-export';
      // The v2 client has no tasks runtime (it refuses resultType 'task' on tools/call): the call
      // goes on the wire as a client that declared the extension sends it; its task's requests go
      // through the v2 client, which sends extension methods with a schema of the caller's.
      const created = await modernTaskRequest(tokenA, 'tools/call', { name, arguments: { format: 'pdf' } }, face);
      expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 1_000 });
      const taskId = created.result?.taskId as string;
      expect(taskId).toMatch(TASK_ID);
      const client = await v2Client(tokenA, face);
      try {
        let task: Json = created.result as Json;
        for (let i = 0; i < 60 && task.status === 'working'; i++) {
          await new Promise((r) => setTimeout(r, 200));
          task = await client.request({ method: 'tasks/get', params: { taskId } }, anyResult);
        }
        expect(task.status).toBe('completed');
        expect(task.result).toMatchObject({
          content: [{ type: 'text', text: 'export ready: pdf' }],
          structuredContent: { format: 'pdf', rows: 42 },
        });
      } finally {
        await client.close();
      }
    });
  }

  it('a task is bound to the token that made it: another token of the same agent cannot read, take, wait for or cancel it', async () => {
    const created = await modernTaskRequest(tokenA, 'tools/call', { name: 'modern__never-ends', arguments: {} });
    const taskId = created.result?.taskId as string;
    expect(taskId).toMatch(TASK_ID);
    const cancels = modern.stats.cancels;
    for (const [method, params] of [
      ['tasks/get', { taskId }],
      ['tasks/cancel', { taskId }],
    ] as const) {
      const modernTry = await modernTaskRequest(tokenB, method, params);
      expect(modernTry.message?.error).toMatchObject({ code: -32602, message: 'Task not found' });
      const legacyTry = await legacyTaskRequest(tokenB, method, params);
      expect(legacyTry.message?.error).toMatchObject({ code: -32602, message: 'Task not found' });
    }
    const result = await legacyTaskRequest(tokenB, 'tasks/result', { taskId });
    expect(result.message?.error).toMatchObject({ code: -32602, message: 'Task not found' });
    const list = await legacyTaskRequest(tokenB, 'tasks/list', {});
    expect((list.result?.tasks as Json[]).map((t) => t.taskId)).not.toContain(taskId);
    // The runtime-style wait by a call naming the task: refused for the other token, nothing waited.
    const resumed = await post(
      faceUrl(),
      tokenB,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'modern__never-ends', arguments: {}, _meta: { 'io.mcpx/taskId': taskId } },
      },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(resumed.result?.isError).toBe(true);
    expect((resumed.result?._meta as Json)['io.mcpx/error']).toMatchObject({ code: 'not_found' });
    // Nothing reached the server, and the task still runs for its owner, who cancels it.
    expect(modern.stats.cancels).toBe(cancels);
    const still = await modernTaskRequest(tokenA, 'tasks/get', { taskId });
    expect(still.result?.status).toBe('working');
    const mine = await legacyTaskRequest(tokenA, 'tasks/list', {});
    expect((mine.result?.tasks as Json[]).map((t) => t.taskId)).toContain(taskId);
    const cancelled = await modernTaskRequest(tokenA, 'tasks/cancel', { taskId });
    expect(cancelled.message?.error).toBeUndefined();
    expect(modern.stats.cancels).toBe(cancels + 1);
    const after = await legacyTaskRequest(tokenA, 'tasks/get', { taskId });
    expect(after.result?.status).toBe('cancelled');
    // Cancelling an ended task: 2025 refuses it, 2026-07-28 acknowledges it (idempotent).
    const again = await legacyTaskRequest(tokenA, 'tasks/cancel', { taskId });
    expect(again.message?.error?.code).toBe(-32602);
    const ack = await modernTaskRequest(tokenA, 'tasks/cancel', { taskId });
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    expect(ack.result).not.toHaveProperty('taskId');
  });

  it('2025 tasks/result waits for the task and answers its result, tied to the task', async () => {
    const created = await legacyTaskRequest(tokenA, 'tools/call', {
      name: 'modern__long-export',
      arguments: { format: 'csv' },
      task: { ttl: 60_000 },
    });
    const task = created.result?.task as Json;
    expect(task).toMatchObject({ status: 'working' });
    expect(task.taskId).toMatch(TASK_ID);
    const result = await legacyTaskRequest(tokenA, 'tasks/result', { taskId: task.taskId });
    expect(result.result).toMatchObject({
      content: [{ type: 'text', text: 'export ready: csv' }],
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: task.taskId } },
    });
  });

  it('a client without tasks is answered as a runtime is: the result within the call bound; a call naming its task waits for it', async () => {
    const client = new V1Client({ name: 'v1-plain', version: '1.0.0' });
    await client.connect(
      new V1Transport(new URL(faceUrl()), { requestInit: { headers: { authorization: `Bearer ${tokenA}` } } }),
    );
    try {
      // simulate-research-query needs a task: the endpoint makes one and answers its report.
      const out = (await client.request(
        { method: 'tools/call', params: { name: 'every__simulate-research-query', arguments: { topic: 'reefs' } } },
        z.looseObject({}) as never,
      )) as Json;
      expect(JSON.stringify(out.content)).toContain('# Research Report: reefs');
    } finally {
      await client.close();
    }
    // A task made by this token, waited for by a plain call of the same tool that names it.
    const created = await modernTaskRequest(tokenA, 'tools/call', {
      name: 'modern__long-export',
      arguments: { format: 'xml' },
    });
    const taskId = created.result?.taskId as string;
    const waited = await post(
      faceUrl(),
      tokenA,
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'modern__long-export', arguments: { format: 'xml' }, _meta: { 'io.mcpx/taskId': taskId } },
      },
      { 'mcp-protocol-version': '2025-11-25' },
    );
    expect(waited.result).toMatchObject({ content: [{ type: 'text', text: 'export ready: xml' }] });
  });

  it('tasks/update of a task that asks nothing is acknowledged; task requests without the declared extension are refused (-32021)', async () => {
    const created = await modernTaskRequest(tokenA, 'tools/call', { name: 'modern__never-ends', arguments: {} });
    const taskId = created.result?.taskId as string;
    const update = await modernTaskRequest(tokenA, 'tasks/update', { taskId, inputResponses: {} });
    expect(update.result).toMatchObject({ resultType: 'complete' });
    const undeclared = await post(
      faceUrl(),
      tokenA,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'tasks/get',
        params: {
          taskId,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          },
        },
      },
      { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'tasks/get', 'mcp-name': taskId },
    );
    expect(undeclared.message?.error?.code).toBe(-32021);
    await modernTaskRequest(tokenA, 'tasks/cancel', { taskId });
  });
});
