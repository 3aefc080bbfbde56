import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { TasksUpstream } from '../servers/tasks-upstream.js';
import { collectSseMessages } from '../support/fixtures/sse-messages.js';
import { eventually } from '../support/system.js';
import type { EndpointSystem } from '../endpoint/endpoint-harness.js';
import { startEndpointTasks } from '../support/fixtures/task-systems.js';
import { post } from '../endpoint/raw-mcp.js';

const TASK_ID = /^tsk_[a-z2-7]{24}$/;
type Json = Record<string, unknown>;

interface GetStream {
  /** The JSON-RPC messages read so far. */
  messages: Json[];
  close(): void;
}

/** A 2025 client's GET notification stream, read as it comes. */
async function openGet(url: string, token: string): Promise<GetStream> {
  const ctl = new AbortController();
  const res = await fetch(url, {
    method: 'GET',
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: ctl.signal,
  });
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream'))
    throw new Error(`no GET stream: ${res.status} ${await res.text()}`);
  const messages: Json[] = [];
  collectSseMessages(res.body as ReadableStream<Uint8Array>, messages);
  return { messages, close: () => ctl.abort() };
}

const statusesOf = (s: GetStream, taskId: string): Json[] =>
  s.messages
    .filter((m) => m.method === 'notifications/tasks/status')
    .map((m) => m.params as Json)
    .filter((p) => p.taskId === taskId);

/**
 * 2025-11-25 `notifications/tasks/status` on the endpoint's GET streams (docs/endpoint.md#tasks):
 * a client whose token made a task hears its status changes, coalesced, until it ends; another
 * token of the same agent, listening on its own stream, never hears of it (the attack).
 */
describe('endpoint: task status notifications to 2025 clients', () => {
  let sys: EndpointSystem;
  let modern: TasksUpstream;
  let tokenA: string;
  let tokenB: string;

  beforeAll(async () => {
    ({ sys, modern, tokenA, tokenB } = await startEndpointTasks('notified', {
      durationMs: 3_000,
      pollIntervalMs: 100,
    }));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await modern?.close();
  });

  it("sends the token's task status, coalesced, until it ends; another token's stream hears nothing of it", async () => {
    const url = sys.urlOf('notified');
    const [a, b] = await Promise.all([openGet(url, tokenA), openGet(url, tokenB)]);
    try {
      const created = await post(
        url,
        tokenA,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'modern__long-export', arguments: { format: 'csv' }, task: { ttl: 60_000 } },
        },
        { 'mcp-protocol-version': '2025-11-25' },
      );
      const task = created.result?.task as Json | undefined;
      const taskId = task?.taskId as string;
      expect(taskId).toMatch(TASK_ID);
      const last = await eventually(
        () => {
          const end = statusesOf(a, taskId).at(-1);
          return Promise.resolve(end?.status === 'completed' ? end : undefined);
        },
        30_000,
        "the completed status on the token's stream",
      );
      expect(last).toMatchObject({ taskId, status: 'completed', pollInterval: 1_000 });
      expect(typeof last.createdAt).toBe('string');
      const seen = statusesOf(a, taskId);
      // Each notification says something new: the same status and message twice is sent once.
      const keys = seen.map((p) => `${String(p.status)}|${String(p.statusMessage)}`);
      expect(new Set(keys).size).toBe(keys.length);
      // The task's own tasks/get agrees with the last notification.
      const got = await post(
        url,
        tokenA,
        { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId } },
        { 'mcp-protocol-version': '2025-11-25' },
      );
      expect(got.result).toMatchObject({ taskId, status: 'completed' });
      // The attack: token B of the same agent listened all along and heard nothing of A's task.
      expect(statusesOf(b, taskId)).toEqual([]);
      expect(b.messages.filter((m) => m.method === 'notifications/tasks/status')).toEqual([]);
      // The relay's metric counts what it sent and what it withheld from the other token.
      const metrics = await eventually(
        async () => {
          const text = await (await fetch(`${sys.endpoint.internalUrl}/metrics`)).text();
          return /mcpx_endpoint_task_notifications_total\{[^}]*outcome="foreign"[^}]*\} [1-9]/.test(text)
            ? text
            : undefined;
        },
        10_000,
        'the relay metrics',
      );
      expect(metrics).toMatch(/mcpx_endpoint_task_notifications_total\{[^}]*outcome="sent"[^}]*\} [1-9]/);
    } finally {
      a.close();
      b.close();
    }
  }, 60_000);

  it("the SDK v1 client's handler for notifications/tasks/status hears its task's statuses to the end (per-server face)", async () => {
    const client = new V1Client(
      { name: 'v1-status', version: '1.0.0' },
      { capabilities: { tasks: { list: {}, cancel: {} } } },
    );
    const heard: Array<{ taskId: string; status: string }> = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
      heard.push({ taskId: n.params.taskId, status: n.params.status });
    });
    await client.connect(
      new V1Transport(new URL(`${sys.endpoint.url}/v1/agents/notified/servers/modern/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokenA}` } },
      }),
    );
    try {
      let taskId: string | undefined;
      for await (const message of client.experimental.tasks.callToolStream(
        { name: 'long-export', arguments: { format: 'xml' } },
        undefined,
        { task: { ttl: 60_000 } },
      )) {
        const m = message as { type: string; task?: { taskId: string } };
        if (m.type === 'taskCreated') taskId = m.task?.taskId;
      }
      expect(taskId).toMatch(TASK_ID);
      const end = await eventually(
        () => Promise.resolve(heard.find((h) => h.taskId === taskId && h.status === 'completed')),
        30_000,
        'the completed notification',
      );
      expect(end).toEqual({ taskId, status: 'completed' });
      expect(heard.every((h) => h.taskId === taskId)).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);
});
