import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { EverythingServer } from '../servers/index.js';
import { startEndpointEverything } from '../support/fixtures/task-systems.js';
import { eventually } from '../support/system.js';
import type { EndpointSystem } from './endpoint-harness.js';

const TASK_ID = /^tsk_[a-z2-7]{24}$/;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
type Json = Record<string, unknown>;

interface Streamed {
  type: string;
  task?: { taskId: string; status: string };
  result?: { content?: Array<{ type: string; text?: string }> };
}

/** What a client's fetch changes on the way (the requests it sends as a browser would, or with `_meta`). */
type Rewrite = (method: string, init: RequestInit, body: Json) => void;

/**
 * A 2025-11-25 endpoint client asked its task's question (server-everything's ambiguous
 * `simulate-research-query`, SDK v1 client that declared elicitation; docs/tasks.md#questions):
 * - its GET stream's `notifications/tasks/status` says `input_required` while the question waits
 *   for it, and `working` again once it answered, as the 2025-11-25 tasks say;
 * - its `tasks/result` is asked the question whatever sent the request to the SDK's path before
 *   (an `Origin` header on it and on the answer; a progress token and a log level in its
 *   `_meta`), and the report uses the answer.
 */
describe(
  "endpoint: a 2025 client's task question, on its GET stream and its tasks/result",
  { timeout: 180_000 },
  () => {
    let sys: EndpointSystem;
    let everything: EverythingServer;
    let token: string;

    beforeAll(async () => {
      ({ sys, everything, tokenA: token } = await startEndpointEverything('asker'));
    }, 120_000);

    afterAll(async () => {
      await sys?.stop();
      await everything?.close();
    });

    /** An SDK v1 client that declared elicitation and tasks; `answer` answers the question. */
    async function v1Client(
      answer: (params: Json) => Promise<{ action: 'accept'; content: Json }>,
      rewrite?: Rewrite,
    ): Promise<V1Client> {
      const client = new V1Client(
        { name: 'v1-asked', version: '1.0.0' },
        { capabilities: { elicitation: {}, tasks: { list: {}, cancel: {} } } },
      );
      client.setRequestHandler(ElicitRequestSchema, (request) => answer(request.params as Json));
      const fetchFn: typeof fetch = async (url, init) => {
        if (rewrite !== undefined && init?.method === 'POST' && typeof init.body === 'string') {
          const body = JSON.parse(init.body) as Json;
          const method = typeof body.method === 'string' ? body.method : 'response';
          const headers = new Headers(init.headers);
          const changed: RequestInit = { ...init, headers };
          rewrite(method, changed, body);
          changed.body = JSON.stringify(body);
          return await fetch(url, changed);
        }
        return await fetch(url, init);
      };
      await client.connect(
        new V1Transport(new URL(sys.urlOf('asker')), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
          fetch: fetchFn,
        }),
      );
      return client;
    }

    /** Runs the ambiguous research as a task to its end; the streamed messages. */
    async function research(client: V1Client, topic: string): Promise<Streamed[]> {
      const seen: Streamed[] = [];
      for await (const message of client.experimental.tasks.callToolStream(
        { name: 'every__simulate-research-query', arguments: { topic, ambiguous: true } },
        undefined,
        { task: { ttl: 120_000 } },
      ))
        seen.push(message as Streamed);
      return seen;
    }

    it('the GET stream says input_required while the question waits for the client, then working, then completed', async () => {
      const heard: Array<{ taskId: string; status: string; statusMessage?: string }> = [];
      let atQuestion: string[] = [];
      const client = await v1Client(async () => {
        // Answered only once the client's GET stream said the task waits for it.
        await eventually(
          () => Promise.resolve(heard.some((h) => h.status === 'input_required') ? true : undefined),
          20_000,
          'input_required on the GET stream',
        );
        atQuestion = heard.map((h) => h.status);
        return { action: 'accept', content: { interpretation: 'snake' } };
      });
      client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
        heard.push({
          taskId: n.params.taskId,
          status: n.params.status,
          ...(n.params.statusMessage !== undefined ? { statusMessage: n.params.statusMessage } : {}),
        });
      });
      try {
        const seen = await research(client, 'python');
        const taskId = seen[0]?.task?.taskId;
        expect(taskId).toMatch(TASK_ID);
        expect(seen.at(-1)?.result?.content?.[0]?.text).toContain('# Research Report: python (snake)');
        await eventually(
          () => Promise.resolve(heard.some((h) => h.status === 'completed') ? true : undefined),
          20_000,
          'completed on the GET stream',
        );
        const statuses = heard.filter((h) => h.taskId === taskId).map((h) => h.status);
        expect(atQuestion.at(-1)).toBe('input_required');
        const asked = statuses.indexOf('input_required');
        expect(asked).toBeGreaterThanOrEqual(0);
        expect(heard.find((h) => h.status === 'input_required')?.statusMessage).toBe(
          'the server asks a question of this client',
        );
        // Back to working once answered, then completed.
        const after = statuses.slice(asked + 1);
        expect(after).toContain('working');
        expect(after.indexOf('working')).toBeLessThan(after.indexOf('completed'));
        expect(statuses.at(-1)).toBe('completed');
      } finally {
        await client.close();
      }
    });

    const origin = (): string => new URL(sys.endpoint.url).origin;
    const variants: Array<[string, () => Rewrite]> = [
      [
        'an Origin header on tasks/result and on the answer',
        () => (method, init) => {
          // The call and the initialize go as before (the call stays on the lean path); the rest as a browser sends them.
          if (method !== 'tools/call' && method !== 'initialize') (init.headers as Headers).set('origin', origin());
        },
      ],
      [
        'a progress token and a log level in its _meta',
        () => (method, _init, body) => {
          if (method !== 'tasks/result') return;
          const params = (body.params ?? {}) as Json;
          body.params = {
            ...params,
            _meta: {
              ...((params._meta as Json | undefined) ?? {}),
              progressToken: 'p-1',
              'io.modelcontextprotocol/logLevel': 'debug',
            },
          };
        },
      ],
    ];
    for (const [name, rewrite] of variants) {
      it(`tasks/result with ${name} is asked the question, and the report uses the answer`, async () => {
        const asked: Json[] = [];
        const client = await v1Client((params) => {
          asked.push(params);
          return Promise.resolve({ action: 'accept', content: { interpretation: 'snake' } });
        }, rewrite());
        try {
          const seen = await research(client, 'python');
          const taskId = seen[0]?.task?.taskId;
          expect(taskId).toMatch(TASK_ID);
          expect(asked).toHaveLength(1);
          expect(asked[0]).toMatchObject({
            message: expect.stringContaining('python'),
            _meta: { [RELATED_TASK]: { taskId } },
          });
          const text = seen.at(-1)?.result?.content?.[0]?.text ?? '';
          expect(text).toContain('# Research Report: python (snake)');
          expect(text).toContain('**Clarification**: snake');
        } finally {
          await client.close();
        }
      });
    }
  },
);
