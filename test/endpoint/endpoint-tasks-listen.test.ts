import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type SubscriptionFilter } from '@modelcontextprotocol/client';
import { startTasksUpstream, TASKS_EXTENSION, type TasksUpstream } from '../servers/tasks-upstream.js';
import { collectSseMessages } from '../support/fixtures/sse-messages.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { MODERN_VERSION, post } from './raw-mcp.js';
import { withBearer } from '../support/fixtures/bearer.js';

type Json = Record<string, unknown>;
const TASK_ID = /^tsk_[a-z2-7]{24}$/;
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

const envelope = (declared: boolean): Json => ({
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': declared ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
});

interface Listen {
  status: number;
  /** The JSON-RPC messages read so far (the acknowledgement first). */
  messages: Json[];
  /** Whether the server ended the stream. */
  ended: () => boolean;
  close(): void;
}

/** A 2026-07-28 `subscriptions/listen` on the raw wire, its stream read as it comes. */
async function rawListen(url: string, token: string, notifications: Json, declared = true): Promise<Listen> {
  const ctl = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-method': 'subscriptions/listen',
      'mcp-protocol-version': MODERN_VERSION,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'listen-1',
      method: 'subscriptions/listen',
      params: { notifications, _meta: envelope(declared) },
    }),
    signal: ctl.signal,
  });
  const messages: Json[] = [];
  let ended = false;
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    messages.push((await res.json()) as Json);
    return { status: res.status, messages, ended: () => true, close: () => ctl.abort() };
  }
  collectSseMessages(res.body as ReadableStream<Uint8Array>, messages, () => (ended = true));
  await eventually(async () => (messages.length > 0 ? true : undefined), 10_000, 'the acknowledgement');
  return { status: res.status, messages, ended: () => ended, close: () => ctl.abort() };
}

const taskNotes = (messages: Json[], taskId: string): Json[] =>
  messages
    .filter((m) => m.method === 'notifications/tasks')
    .map((m) => m.params as Json)
    .filter((p) => p.taskId === taskId);

/**
 * 2026-07-28 task status notifications on `subscriptions/listen` (SEP-2663; docs/endpoint.md#tasks):
 * a listen naming its token's task ids is acknowledged with them and hears `notifications/tasks`
 * (the task as `tasks/get` shows it) to the end, with the SDK v2 client and on the raw wire, beside
 * the SDK's own notifications; another token's task id is not taken and never heard (the attack);
 * a listen naming too many ids is refused.
 */
describe('endpoint: task notifications on a 2026-07-28 listen', () => {
  let sys: EndpointSystem;
  let modern: TasksUpstream;
  let other: TasksUpstream;
  let tokenA: string;
  let tokenB: string;
  let url: string;

  beforeAll(async () => {
    [sys, modern, other] = await Promise.all([
      startEndpointSystem({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startTasksUpstream({ durationMs: 3_000, pollIntervalMs: 100 }),
      startTasksUpstream({ durationMs: 3_000, pollIntervalMs: 100 }),
    ]);
    await sys.system.setServer('modern', modern.url);
    await sys.system.setServer('other', other.url);
    await sys.system.createAgent('listener', ['modern', 'other'], 3);
    tokenA = (await sys.token('listener')).token;
    tokenB = (await sys.token('listener')).token;
    url = sys.urlOf('listener');
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([modern?.close(), other?.close()]);
  });

  const modernRequest = (token: string, method: string, params: Json) =>
    post(
      url,
      token,
      { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope(true) } },
      {
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': method,
        'mcp-name': String(params.taskId ?? params.name),
      },
    );

  const createTask = async (token: string, name = 'modern__long-export'): Promise<string> => {
    const created = await modernRequest(token, 'tools/call', { name, arguments: { format: 'pdf' } });
    const taskId = created.result?.taskId as string;
    expect(taskId).toMatch(TASK_ID);
    return taskId;
  };

  it('an SDK v2 client listening on its task hears notifications/tasks to the result', async () => {
    const taskId = await createTask(tokenA);
    const client = new Client(
      { name: 'v2-listen', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    );
    const heard: Json[] = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tasks') heard.push(n.params as Json);
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(url), withBearer(tokenA)));
    try {
      const sub = await client.listen({ taskIds: [taskId] } as SubscriptionFilter);
      // The SDK's client keeps the acknowledged filter by its own schema, which has no taskIds (the
      // raw wire's acknowledgement names them, below); the stream stays open for the task's notifications.
      let closed: string | undefined;
      void sub.closed.then((c) => (closed = c));
      const done = await eventually(
        async () => heard.find((p) => p.taskId === taskId && p.status === 'completed'),
        30_000,
        'the completed notification',
      );
      expect(done.result).toMatchObject({ content: [{ type: 'text', text: 'export ready: pdf' }] });
      const statuses = heard.filter((p) => p.taskId === taskId).map((p) => p.status);
      expect(statuses[0]).toBe('working');
      expect(statuses.at(-1)).toBe('completed');
      expect(closed).toBeUndefined();
      // Each notification is a DetailedTask of the extension, stamped with its listen.
      for (const p of heard) {
        expect(p).toMatchObject({ taskId, createdAt: expect.any(String), lastUpdatedAt: expect.any(String) });
        expect((p._meta as Json)[SUBSCRIPTION_ID]).toEqual(expect.any(String));
      }
      await sub.close();
    } finally {
      await client.close();
    }
  });

  it('carries the SDK’s listen beside the tasks: the acknowledgement names both, the task is heard to its end', async () => {
    const taskId = await createTask(tokenA);
    const listen = await rawListen(url, tokenA, { toolsListChanged: true, taskIds: [taskId] });
    try {
      expect(listen.messages[0]).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: {
          notifications: { toolsListChanged: true, taskIds: [taskId] },
          _meta: { [SUBSCRIPTION_ID]: 'listen-1' },
        },
      });
      await eventually(
        async () => (taskNotes(listen.messages, taskId).some((p) => p.status === 'completed') ? true : undefined),
        30_000,
        'the completed notification',
      );
      expect(listen.ended()).toBe(false);
    } finally {
      listen.close();
    }
  });

  it('attack: another token’s task id in a listen is not taken and never heard', async () => {
    const taskA = await createTask(tokenA);
    const taskB = await createTask(tokenB);
    const unknown = 'tsk_aaaaaaaaaaaaaaaaaaaaaaaa';
    const mixed = await rawListen(url, tokenB, { taskIds: [taskA, unknown, taskB] });
    const only = await rawListen(url, tokenB, { taskIds: [taskA] });
    try {
      expect(mixed.messages[0]).toMatchObject({ params: { notifications: { taskIds: [taskB] } } });
      // A listen of another token's tasks only takes none, and ends as the SDK ends an empty one.
      expect(only.messages[0]).toMatchObject({ params: { notifications: {} } });
      expect((only.messages[0]?.params as Json).notifications).toEqual({});
      await eventually(async () => (only.ended() ? true : undefined), 10_000, 'the empty listen ended');
      expect(only.messages[1]).toMatchObject({ id: 'listen-1', result: { resultType: 'complete' } });
      // Both tasks end; B's stream has heard its own to the end and nothing of A's.
      await eventually(
        async () => (taskNotes(mixed.messages, taskB).some((p) => p.status === 'completed') ? true : undefined),
        30_000,
        'B’s task completed',
      );
      await eventually(async () => {
        const got = await modernRequest(tokenA, 'tasks/get', { taskId: taskA });
        return got.result?.status === 'completed' ? true : undefined;
      }, 30_000);
      expect(taskNotes(mixed.messages, taskA)).toEqual([]);
      expect(taskNotes(mixed.messages, unknown)).toEqual([]);
    } finally {
      mixed.close();
      only.close();
    }
  });

  it('on a per-server face, takes only that server’s tasks of the token', async () => {
    const taskId = await createTask(tokenA);
    const face = (server: string): string => `${sys.endpoint.url}/v1/agents/listener/servers/${server}/mcp`;
    const own = await rawListen(face('modern'), tokenA, { taskIds: [taskId] });
    const elsewhere = await rawListen(face('other'), tokenA, { taskIds: [taskId] });
    try {
      expect(own.messages[0]).toMatchObject({ params: { notifications: { taskIds: [taskId] } } });
      expect((elsewhere.messages[0]?.params as Json).notifications).toEqual({});
      await eventually(
        async () => (taskNotes(own.messages, taskId).some((p) => p.status === 'completed') ? true : undefined),
        30_000,
        'the completed notification on its server’s face',
      );
      expect(taskNotes(elsewhere.messages, taskId)).toEqual([]);
    } finally {
      own.close();
      elsewhere.close();
    }
  });

  it('refuses a listen naming more task ids than its bound, and takes none from a client without the extension', async () => {
    const ids = Array.from({ length: 101 }, (_, i) => `tsk_${String(i).padStart(24, 'a')}`);
    const refused = await rawListen(url, tokenA, { taskIds: ids });
    expect(refused.messages[0]).toMatchObject({
      id: 'listen-1',
      error: { code: -32602, data: { code: 'invalid_input', field: 'params.notifications.taskIds', max: 100 } },
    });
    const taskId = await createTask(tokenA, 'modern__never-ends');
    const undeclared = await rawListen(url, tokenA, { taskIds: [taskId] }, false);
    try {
      expect((undeclared.messages[0]?.params as Json).notifications).toEqual({});
    } finally {
      undeclared.close();
      await modernRequest(tokenA, 'tasks/cancel', { taskId });
    }
  });
});
