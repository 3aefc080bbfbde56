import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

/** The 2026-07-28 tasks extension's identifier (SEP-2663). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export interface TasksUpstreamOptions {
  /** How long `long-export` runs (default 3 minutes; tests shorten it). */
  durationMs?: number;
  /** The `pollIntervalMs` the server suggests (default 500). */
  pollIntervalMs?: number;
  /** The task ttl the server keeps (default 10 minutes). */
  ttlMs?: number;
  port?: number;
  /** Told of each task created (the bench measures from `endsAt`, when the task is done upstream). */
  onCreated?: (task: { taskId: string; endsAt: number; format: string }) => void;
  /** Told of each `tasks/get` (the bench counts them per task). */
  onGet?: (taskId: string) => void;
}

interface ServerTask {
  taskId: string;
  status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  result?: Record<string, unknown>;
  endsAt: number;
  format: string;
  /** `clarify-export`: the question it waits on, until `tasks/update` answers it. */
  question?: Record<string, unknown>;
}

/** The trace context one request carried: its `traceparent` header, and its `_meta.traceparent`. */
export interface SeenTrace {
  method: string;
  taskId?: string;
  header?: string;
  meta?: string;
}

export interface TasksUpstream {
  url: string;
  port: number;
  stats: {
    calls: number;
    gets: Map<string, number>;
    cancels: number;
    created: number;
    updates: number;
    /** The trace context of the last 1000 requests, in the order they came. */
    traces: SeenTrace[];
  };
  /** Forgets every task (as a restart does) without closing the port. */
  forget(): void;
  close(): Promise<void>;
}

const SERVER_INFO = { name: 'mcpx-tasks-upstream', version: '0.1.0' };

/** `clarify-export`'s question: a form with one choice. */
const CLARIFY_QUESTION = {
  format: {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: 'Which format should the export have?',
      requestedSchema: {
        type: 'object',
        properties: { format: { type: 'string', enum: ['csv', 'pdf', 'parquet'] } },
        required: ['format'],
      },
    },
  },
};

/** `confirm-then-export`'s question, asked synchronously (SEP-2322) before any task exists. */
const CONFIRM_QUESTION = {
  confirm: {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: 'Start the export?',
      requestedSchema: { type: 'object', properties: { format: { type: 'string' } }, required: ['format'] },
    },
  },
};

/**
 * A modern (2026-07-28 only) server on the SDK v2 that speaks the tasks extension: it advertises
 * `io.modelcontextprotocol/tasks`, and a `tools/call` of `long-export` whose `_meta` client
 * capabilities declare the extension is answered with a created task (`resultType: 'task'`);
 * `tasks/get` reports it, with the result inline once it completed; `tasks/cancel` cancels.
 * `never-ends` is a task that stays `working`. `clarify-export` asks a question first (`input_required`
 * with `inputRequests` in `tasks/get`) and exports in the format `tasks/update` answers.
 * `confirm-then-export` answers `input_required` at once (a form question, no task yet) and
 * creates its task, in the answered format, once the call is re-sent with the answer;
 * `settle-then-export` answers `input_required` with a `requestState` only, and creates its task
 * when the call comes back with it. `quick` answers at once even when asked for a task.
 * The SDK v2 has no tasks runtime: the task methods are served by handlers registered with schemas.
 */
export async function startTasksUpstream(opts: TasksUpstreamOptions = {}): Promise<TasksUpstream> {
  const durationMs = opts.durationMs ?? 180_000;
  const pollIntervalMs = opts.pollIntervalMs ?? 500;
  const ttlMs = opts.ttlMs ?? 600_000;
  let tasks = new Map<string, ServerTask>();
  const stats = {
    calls: 0,
    gets: new Map<string, number>(),
    cancels: 0,
    created: 0,
    updates: 0,
    traces: [] as SeenTrace[],
  };
  const now = (): string => new Date().toISOString();
  const advance = (t: ServerTask): void => {
    if (t.status === 'working' && t.question !== undefined)
      Object.assign(t, { status: 'input_required', statusMessage: 'which format?', lastUpdatedAt: now() });
    if (t.status !== 'working') return;
    const left = t.endsAt - Date.now();
    if (left <= 0) {
      t.status = 'completed';
      t.statusMessage = 'done';
      t.result = {
        content: [{ type: 'text', text: `export ready: ${t.format}` }],
        structuredContent: { format: t.format, rows: 42 },
      };
      t.lastUpdatedAt = now();
      return;
    }
    const message = `exporting (${Math.max(0, Math.ceil(left / 1000))} s left)`;
    if (message !== t.statusMessage) {
      t.statusMessage = message;
      t.lastUpdatedAt = now();
    }
  };
  const wire = (t: ServerTask): Record<string, unknown> => ({
    taskId: t.taskId,
    status: t.status,
    ...(t.statusMessage !== undefined ? { statusMessage: t.statusMessage } : {}),
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs,
    pollIntervalMs,
    ...(t.status === 'completed' && t.result ? { result: t.result } : {}),
    ...(t.status === 'failed' ? { error: { code: -32603, message: 'export failed' } } : {}),
    ...(t.status === 'input_required' && t.question ? { inputRequests: t.question } : {}),
  });
  const factory = (): Server => {
    const server = new Server(SERVER_INFO, { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } });
    server.setRequestHandler(
      'tools/list',
      () =>
        ({
          tools: [
            {
              name: 'long-export',
              description: 'Exports a report; runs for minutes as a task.',
              inputSchema: { type: 'object', properties: { format: { type: 'string' } }, required: ['format'] },
            },
            {
              name: 'never-ends',
              description: 'A task that never finishes.',
              inputSchema: { type: 'object', properties: {} },
            },
            { name: 'quick', description: 'Answers at once.', inputSchema: { type: 'object', properties: {} } },
            {
              name: 'confirm-then-export',
              description: 'Asks to confirm (input_required, before any task), then exports as a task.',
              inputSchema: { type: 'object', properties: {} },
            },
            {
              name: 'settle-then-export',
              description: 'Answers input_required with a requestState only, then exports as a task.',
              inputSchema: { type: 'object', properties: {} },
            },
            {
              name: 'clarify-export',
              description: 'Asks which format (input_required), then exports as a task.',
              inputSchema: { type: 'object', properties: {} },
            },
          ],
          ttlMs: 0,
          cacheScope: 'public',
        }) as never,
    );
    server.setRequestHandler('tools/call', (request, ctx) => {
      stats.calls++;
      // The request's declared capabilities (2026-07-28: each request carries them in its _meta).
      const caps = server.getClientCapabilities() as { extensions?: Record<string, unknown> } | undefined;
      const asked = caps?.extensions?.[TASKS_EXTENSION] !== undefined;
      const name = request.params.name;
      if (name === 'quick' || !asked) return { content: [{ type: 'text', text: `${name} ran at once` }] };
      let format = typeof request.params.arguments?.format === 'string' ? request.params.arguments.format : 'csv';
      if (name === 'confirm-then-export') {
        // SEP-2322: the question comes back synchronously; the task is created only once it is answered.
        const responses = (ctx.mcpReq as { inputResponses?: Record<string, unknown> }).inputResponses;
        const answer = responses?.confirm as { action?: string; content?: { format?: unknown } } | undefined;
        if (answer?.action !== 'accept' || typeof answer.content?.format !== 'string')
          return { resultType: 'input_required', inputRequests: CONFIRM_QUESTION } as never;
        format = answer.content.format;
      }
      if (name === 'settle-then-export') {
        const state = (ctx.mcpReq as { requestState?: unknown }).requestState;
        const raw = typeof state === 'function' ? (state as () => unknown)() : state;
        if (raw !== 'settled') return { resultType: 'input_required', requestState: 'settled' } as never;
        format = 'settled';
      }
      const t: ServerTask = {
        taskId: randomUUID(),
        status: 'working',
        statusMessage: 'queued',
        createdAt: now(),
        lastUpdatedAt: now(),
        endsAt: name === 'never-ends' ? Number.POSITIVE_INFINITY : Date.now() + durationMs,
        format,
      };
      if (name === 'clarify-export') {
        // SEP-2663: the task asks in `tasks/get` (`inputRequests`), answered with `tasks/update`;
        // it is created `working` and asks from its first `tasks/get` on.
        Object.assign(t, { endsAt: Number.POSITIVE_INFINITY, question: CLARIFY_QUESTION });
      }
      tasks.set(t.taskId, t);
      stats.created++;
      opts.onCreated?.({ taskId: t.taskId, endsAt: t.endsAt, format: t.format });
      return { resultType: 'task', ...wire(t) } as never;
    });
    // Extension methods that reuse the 2025 names: served with schemas of their own (the SDK's way).
    const taskIdParams = { params: z.object({ taskId: z.string() }).passthrough() };
    const find = (taskId: string): ServerTask => {
      const t = tasks.get(taskId);
      if (t === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Task not found');
      return t;
    };
    server.setRequestHandler('tasks/get', taskIdParams, (params) => {
      const t = find(params.taskId);
      stats.gets.set(t.taskId, (stats.gets.get(t.taskId) ?? 0) + 1);
      opts.onGet?.(t.taskId);
      advance(t);
      return wire(t);
    });
    server.setRequestHandler('tasks/update', taskIdParams, (params, ctx) => {
      const t = find(params.taskId);
      stats.updates++;
      if (t.status !== 'input_required') return {};
      // The SDK lifts a request's `inputResponses` off its params (they are the MRTR retry's field).
      const responses = (ctx.mcpReq as { inputResponses?: Record<string, unknown> }).inputResponses ?? {};
      const answer = responses.format as { action?: string; content?: { format?: unknown } } | undefined;
      const chosen =
        answer?.action === 'accept' && typeof answer.content?.format === 'string'
          ? answer.content.format
          : 'csv (no answer)';
      Object.assign(t, {
        status: 'working',
        statusMessage: `exporting as ${chosen}`,
        format: chosen,
        endsAt: Date.now() + durationMs,
        question: undefined,
        lastUpdatedAt: now(),
      });
      return {};
    });
    server.setRequestHandler('tasks/cancel', taskIdParams, (params) => {
      const t = find(params.taskId);
      stats.cancels++;
      if (t.status === 'working' || t.status === 'input_required')
        Object.assign(t, { status: 'cancelled', statusMessage: 'cancelled', lastUpdatedAt: now() });
      return {};
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: 'reject' });
  const node = toNodeHandler(handler);
  const http: HttpServer = createServer((req, res) => {
    if (req.url?.startsWith('/mcp') !== true) {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== 'POST') {
      void node(req, res);
      return;
    }
    // Read here to note the trace context each request carries, then handed over parsed.
    void readJson(req).then((body) => {
      if (body === undefined) {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
        return;
      }
      const seen = seenTrace(body, req.headers.traceparent);
      if (seen !== undefined) stats.traces = [...stats.traces, seen].slice(-1000);
      void node(req, res, body);
    });
  });
  await new Promise<void>((resolve) => http.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    stats,
    forget: () => {
      tasks = new Map();
    },
    close: async () => {
      await handler.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The trace context of a JSON-RPC request (not a response or a notification), as it came. */
function seenTrace(body: unknown, header: string | string[] | undefined): SeenTrace | undefined {
  const m = body as {
    method?: unknown;
    id?: unknown;
    params?: { taskId?: unknown; _meta?: { traceparent?: unknown } };
  };
  if (m === null || typeof m !== 'object' || typeof m.method !== 'string' || m.id === undefined) return undefined;
  const seen: SeenTrace = { method: m.method };
  if (typeof m.params?.taskId === 'string') seen.taskId = m.params.taskId;
  if (typeof header === 'string') seen.header = header;
  if (typeof m.params?._meta?.traceparent === 'string') seen.meta = m.params._meta.traceparent;
  return seen;
}
