import { SpanKind, SpanStatusCode, type Counter, type Span, type Tracer } from '@opentelemetry/api';
import type { TaskClient } from '@mcpx/proxy-client';
import {
  SERVER_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
  type McpHandlerRequestOptions,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import type { EndpointTasks } from './endpoint-tasks.js';
import type { StreamMessage } from './legacy-subscriptions.js';
import type { TaskStatusRelay } from './task-status.js';
import { declaresTasksExtension } from './task-wire.js';

/** Task ids one listen may name; a listen naming more is refused whole (`-32602`). */
export const TASK_LISTEN_MAX = 100;

/** The longest task id read from a listen (the connector's are 28 characters). */
const TASK_ID_MAX = 256;
const KEEPALIVE_MS = 15_000;
const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};
const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

/** What a `subscriptions/listen` asks of its tasks: the ids, and the body without them (what the SDK is handed). */
interface TaskAsk {
  id: string | number;
  taskIds: string[];
  /** The listen without `taskIds`: the SDK serves the rest of its filter. */
  rest: unknown;
  /** Whether the rest asks anything (else the SDK would acknowledge nothing and end the stream). */
  restAsks: boolean;
  /** Whether the listen's client declared the tasks extension (else its `taskIds` are ignored). */
  declared: boolean;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The task part of a listen body: undefined when the body is not a listen or names no
 * `taskIds`; a refusal's reason when they are malformed or too many.
 */
export function taskAskOf(body: unknown): TaskAsk | { invalid: string } | undefined {
  if (!isObject(body) || body.method !== 'subscriptions/listen' || !isObject(body.params)) return undefined;
  const filter = body.params.notifications;
  if (!isObject(filter) || filter.taskIds === undefined) return undefined;
  const ids = filter.taskIds;
  if (!Array.isArray(ids) || !ids.every((t) => typeof t === 'string' && t.length > 0 && t.length <= TASK_ID_MAX))
    return { invalid: 'params.notifications.taskIds: must be an array of task ids' };
  if (ids.length > TASK_LISTEN_MAX)
    return { invalid: `params.notifications.taskIds: at most ${TASK_LISTEN_MAX} task ids per listen` };
  const { taskIds: _taken, ...others } = filter;
  const rs = others.resourceSubscriptions;
  const restAsks =
    others.toolsListChanged === true ||
    others.promptsListChanged === true ||
    others.resourcesListChanged === true ||
    (Array.isArray(rs) && rs.length > 0);
  const meta = isObject(body.params._meta) ? body.params._meta : {};
  return {
    id: typeof body.id === 'string' || typeof body.id === 'number' ? body.id : 0,
    taskIds: [...new Set(ids as string[])],
    rest: { ...body, params: { ...body.params, notifications: others } },
    restAsks,
    declared: declaresTasksExtension(meta[CLIENT_CAPABILITIES_KEY]),
  };
}

export interface TaskListensDeps {
  relay: TaskStatusRelay;
  tasks: EndpointTasks;
  tracer: Tracer;
  /** The endpoint's request counter (`mcpx_endpoint_requests_total{method,outcome}`). */
  requests: Counter;
  info: { name: string; version: string };
}

/** The listen's graceful end (its empty result), as the SDK's listen ends. */
const closing = (id: string | number, info: TaskListensDeps['info']): string =>
  frame({
    id,
    result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META_KEY]: id, [SERVER_INFO_META_KEY]: info } },
  });

const frame = (m: Json): string => `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...m })}\n\n`;

/**
 * 2026-07-28 task status notifications on `subscriptions/listen` (SEP-2663; docs/endpoint.md#tasks),
 * which the SDK's listen does not carry: a listen whose filter names `taskIds` (its client having
 * declared the tasks extension) is acknowledged with the ids taken, exactly those of its token's
 * tasks (on a per-server face, that server's; any other id, another token's or none, is left out
 * as if it never was), and then hears `notifications/tasks` for them, each the task as `tasks/get`
 * shows it, the current status first, coalesced as the 2025 stream's (./task-status.ts). The rest
 * of the filter is the SDK's, whose stream this one carries (its acknowledgement gains the ids); a
 * listen of tasks only is served here whole. Bounded: {@link TASK_LISTEN_MAX} ids per listen.
 * A span `endpoint.tasks/listen` and `mcpx_endpoint_requests_total{method="tasks/listen"}` per listen.
 */
export class TaskListens {
  constructor(private readonly deps: TaskListensDeps) {}

  /** `handler` with listens of tasks served (the same handler otherwise); its close ends those streams too. */
  wrap(
    handler: McpHttpHandler,
    face: string | undefined,
    grantOf: (clientId: string | undefined) => TokenGrant,
  ): McpHttpHandler {
    const ends = new Set<() => void>();
    return {
      bus: handler.bus,
      notify: handler.notify,
      fetch: (request, options) => this.fetch(handler, face, grantOf, ends, request, options),
      close: async () => {
        for (const end of [...ends]) end();
        await handler.close();
      },
    };
  }

  private async fetch(
    handler: McpHttpHandler,
    face: string | undefined,
    grantOf: (clientId: string | undefined) => TokenGrant,
    ends: Set<() => void>,
    request: Request,
    options: McpHandlerRequestOptions | undefined,
  ): Promise<Response> {
    const ask = taskAskOf(options?.parsedBody);
    if (ask === undefined) return await handler.fetch(request, options);
    const grant = grantOf(options?.authInfo?.clientId);
    const span = this.deps.tracer.startSpan('endpoint.tasks/listen', {
      kind: SpanKind.SERVER,
      attributes: { 'mcpx.account': grant.account, 'mcpx.agent': grant.agent },
    });
    let outcome = 'ok';
    try {
      if ('invalid' in ask) {
        outcome = 'refused';
        return refusal(options?.parsedBody, ask.invalid);
      }
      if (!ask.declared) outcome = 'undeclared';
      const accepted = ask.declared ? await this.accept(grant, face, ask.taskIds, span) : [];
      span.setAttributes({ 'mcpx.tasks.asked': ask.taskIds.length, 'mcpx.tasks.accepted': accepted.length });
      const res = ask.restAsks ? await handler.fetch(request, { ...options, parsedBody: ask.rest }) : undefined;
      // The SDK refused the rest (a bound, a malformed filter): its answer as it is.
      if (res !== undefined && !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res;
      return this.stream(grant, ask.id, accepted, res, ends, request.signal);
    } catch (err) {
      outcome = 'error';
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      this.deps.requests.add(1, { method: 'tasks/listen', outcome });
    }
  }

  /** The ids among `ids` of the token's own tasks (on a per-server face, of that server), in the order asked. */
  private async accept(grant: TokenGrant, face: string | undefined, ids: string[], span: Span): Promise<string[]> {
    const client = this.deps.tasks.clientUnder(span);
    const owned = await Promise.all(ids.map((id) => this.deps.tasks.owned(grant, id, face, client)));
    return ids.filter((_id, i) => owned[i] !== undefined);
  }

  /**
   * The listen's stream: the SDK's (`sdk`) carried through with its acknowledgement naming the
   * task ids taken, or one of its own for a listen of tasks only; the tasks' notifications beside.
   */
  private stream(
    grant: TokenGrant,
    id: string | number,
    accepted: string[],
    sdk: Response | undefined,
    ends: Set<() => void>,
    signal: AbortSignal,
  ): Response {
    const { relay, tasks, info } = this.deps;
    // Each notification is the task as `tasks/get` shows it then (its row read again, still the token's).
    const render = async (task: string, client: TaskClient): Promise<StreamMessage | undefined> => {
      const view = await tasks.owned(grant, task, undefined, client);
      return view === undefined
        ? undefined
        : { method: 'notifications/tasks', params: await tasks.detailed(grant, view, client) };
    };
    const enc = new TextEncoder();
    const stamp = (m: StreamMessage): Json => ({
      method: m.method,
      params: { ...m.params, _meta: { ...(m.params?._meta as Json | undefined), [SUBSCRIPTION_ID_META_KEY]: id } },
    });
    let end = (_graceful: boolean): void => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        let closed = false;
        let detach = (): void => {};
        let keepalive: NodeJS.Timeout | undefined;
        const reader = sdk?.body?.getReader();
        const write = (text: string): void => {
          if (closed) return;
          try {
            controller.enqueue(enc.encode(text));
          } catch {
            end(false);
          }
        };
        const notify = (m: StreamMessage): void => write(frame(stamp(m)));
        end = (graceful) => {
          if (closed) return;
          if (graceful) write(closing(id, info));
          closed = true;
          ends.delete(stop);
          detach();
          if (keepalive !== undefined) clearInterval(keepalive);
          reader?.cancel().catch(() => undefined);
          try {
            controller.close();
          } catch {
            // already closed
          }
        };
        const stop = (): void => end(true);
        ends.add(stop);
        signal.addEventListener('abort', () => end(false), { once: true });
        const relayTasks = (): void => {
          if (accepted.length > 0 && !closed) detach = relay.listen(grant, accepted, render, notify);
        };
        const taskIds = accepted.length > 0 ? { taskIds: accepted } : {};
        if (reader === undefined) {
          notify({ method: 'notifications/subscriptions/acknowledged', params: { notifications: taskIds } });
          if (accepted.length === 0) return end(true);
          keepalive = setInterval(() => write(': keepalive\n\n'), KEEPALIVE_MS);
          return relayTasks();
        }
        void carry(reader, write, taskIds, relayTasks).finally(() => end(false));
      },
      cancel() {
        end(false);
      },
    });
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  }
}

/**
 * Carries the SDK's listen stream frame by frame: its acknowledgement with `taskIds` added (the
 * tasks are relayed from then on, `acked`), everything else as it is, until it ends.
 */
async function carry(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  write: (text: string) => void,
  taskIds: Json,
  acked: () => void,
): Promise<void> {
  const dec = new TextDecoder();
  let buf = '';
  let seenAck = false;
  for (;;) {
    const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (chunk.done) return;
    buf += dec.decode(chunk.value, { stream: true });
    let at: number;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const text = buf.slice(0, at + 2);
      buf = buf.slice(at + 2);
      if (seenAck) {
        write(text);
        continue;
      }
      const ack = ackOf(text);
      if (ack === undefined) {
        write(text);
        continue;
      }
      seenAck = true;
      const params = isObject(ack.params) ? ack.params : {};
      const notifications = isObject(params.notifications) ? params.notifications : {};
      write(frame({ ...ack, params: { ...params, notifications: { ...notifications, ...taskIds } } }));
      acked();
    }
  }
}

/** The acknowledgement in one SSE frame of the SDK's listen stream, if it is that frame. */
function ackOf(text: string): Json | undefined {
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
  if (data === '') return undefined;
  try {
    const m = JSON.parse(data) as unknown;
    if (!isObject(m) || m.method !== 'notifications/subscriptions/acknowledged') return undefined;
    const { jsonrpc: _v, ...rest } = m;
    return rest;
  } catch {
    return undefined;
  }
}

/** A listen whose `taskIds` cannot be taken: its JSON-RPC error (`-32602`, naming the field). */
function refusal(body: unknown, message: string): Response {
  const id = isObject(body) && (typeof body.id === 'string' || typeof body.id === 'number') ? body.id : null;
  return Response.json({
    jsonrpc: '2.0',
    id,
    error: {
      code: -32602,
      message: `Invalid params: ${message}`,
      data: { code: 'invalid_input', field: 'params.notifications.taskIds', max: TASK_LISTEN_MAX },
    },
  });
}
