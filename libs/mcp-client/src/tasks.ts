import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  type ClientCapabilities,
  type Implementation,
  type Tool,
} from '@modelcontextprotocol/client';
import { SseResponseScanner, type JsonRpcOther } from './body-reader.js';
import { McpClientError, McpClientErrorCode, isSessionLost } from './errors.js';
import type { McpHttpRequest } from './http-request.js';
import { encodeMcpParamValue } from './mcp-param-headers.js';
import { CallClock } from './call-clock.js';
import { type LegacyTarget } from './call-target.js';
import { answerServerRequest, traceMeta } from './call-request.js';
import { readAnswer, resultObject } from './call-answer.js';

/**
 * Tasks, both dialects behind one interface (docs/tasks.md):
 * - 2025-11-25 (legacy sessions): the experimental tasks of SEP-1686. A tool lists
 *   `execution.taskSupport`; a call asks with `params.task: {ttl}` and is answered
 *   `{task: {taskId, status, ttl, pollInterval, …}}`; `tasks/get` polls, `tasks/result` fetches
 *   the result (and carries the server's `elicitation/create` of an `input_required` task on its
 *   stream), `tasks/cancel` cancels.
 * - 2026-07-28 (modern): the tasks extension `io.modelcontextprotocol/tasks` (SEP-2663). The server
 *   advertises it under `capabilities.extensions`; a call that declares it in its
 *   `_meta` client capabilities may be answered `{resultType: 'task', taskId, status, ttlMs,
 *   pollIntervalMs, …}`; `tasks/get` polls and carries the result, the error or the questions
 *   (`inputRequests`) inline; `tasks/update` answers the questions; `tasks/cancel` cancels.
 * Wire requests after creation go out on their own (a URL, headers, the era's version and a
 * legacy session id are all they need), so any proxy instance can poll a task another created.
 */
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';

/** The dialects: the revision whose tasks a server speaks. */
export const TaskDialect = { legacy: '2025-11-25', modern: '2026-07-28' } as const;
export type TaskDialect = (typeof TaskDialect)[keyof typeof TaskDialect];

/** A task's states, the same words in both dialects. */
export const UpstreamTaskStatus = {
  working: 'working',
  inputRequired: 'input_required',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type UpstreamTaskStatus = (typeof UpstreamTaskStatus)[keyof typeof UpstreamTaskStatus];
const STATUSES = new Set<string>(Object.values(UpstreamTaskStatus));

/** Whether a status is final. */
export function isTerminalStatus(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** A task as either dialect's server reports it, in one shape; every field checked and bounded. */
export interface UpstreamTask {
  taskId: string;
  status: UpstreamTaskStatus;
  statusMessage?: string;
  /** How long the server keeps the task, from its creation (null: unlimited, as it says). */
  ttlMs?: number | null;
  /** The server's suggested poll interval. */
  pollIntervalMs?: number;
  /** 2026-07-28 `completed`: the tool's result, inline. */
  result?: Record<string, unknown>;
  /** 2026-07-28 `failed`: the JSON-RPC error. */
  error?: { code: number; message: string };
  /** 2026-07-28 `input_required`: the questions, by key. */
  inputRequests?: Record<string, unknown>;
}

const STATUS_MESSAGE_MAX = 1_024;
const TASK_ID_MAX = 256;

/** Whether a modern server's capabilities advertise the tasks extension. */
export function offersTasksExtension(capabilities: unknown): boolean {
  const ext = (capabilities as { extensions?: unknown } | null | undefined)?.extensions;
  if (ext === null || typeof ext !== 'object' || Array.isArray(ext)) return false;
  const v = (ext as Record<string, unknown>)[TASKS_EXTENSION_ID];
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A modern server that offers the tasks extension decides per call whether a call becomes a task:
 * each of its tools is listed with `execution.taskSupport: 'optional'` (unless it says otherwise),
 * so the tool documents record it. Legacy tools are returned as listed.
 */
export function withTaskSupport(tools: Tool[], era: 'modern' | 'legacy', capabilities: unknown): Tool[] {
  if (era !== 'modern' || !offersTasksExtension(capabilities)) return tools;
  return tools.map((t) => {
    const execution = (t as { execution?: { taskSupport?: unknown } }).execution;
    if (typeof execution?.taskSupport === 'string') return t;
    return { ...t, execution: { ...(execution ?? {}), taskSupport: 'optional' } };
  });
}

/** The client capabilities of a task-augmented modern call: the given ones plus the tasks extension. */
export function withTasksExtension(capabilities: ClientCapabilities): ClientCapabilities {
  const extensions = (capabilities as { extensions?: Record<string, unknown> }).extensions ?? {};
  return { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION_ID]: {} } };
}

/**
 * The task a `tools/call` result creates, or undefined when the result is the tool's own: legacy
 * `{task: {taskId, status, …}}`, modern `{resultType: 'task', taskId, status, …}`. A creation
 * result that does not hold together is a `protocol_error`.
 */
export function createdTaskOf(result: unknown, era: 'modern' | 'legacy'): UpstreamTask | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const r = result as Record<string, unknown>;
  if (era === 'modern') {
    if (r.resultType !== 'task') return undefined;
    return upstreamTaskOf(r, era, 'tools/call');
  }
  if (r.task === null || typeof r.task !== 'object' || r.content !== undefined) return undefined;
  return upstreamTaskOf(r.task, era, 'tools/call');
}

/** A task as `tasks/get` (or a creation) reports it, checked: an ill-formed one is a `protocol_error` naming the field. */
export function upstreamTaskOf(value: unknown, era: 'modern' | 'legacy', method: string): UpstreamTask {
  const bad = (why: string): McpClientError =>
    new McpClientError(McpClientErrorCode.ProtocolError, `MCP server answered ${method} with an invalid task: ${why}`, {
      transport: 'http',
    });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw bad('not an object');
  const v = value as Record<string, unknown>;
  if (typeof v.taskId !== 'string' || v.taskId === '' || v.taskId.length > TASK_ID_MAX) throw bad('taskId');
  if (typeof v.status !== 'string' || !STATUSES.has(v.status)) throw bad('status');
  const task: UpstreamTask = { taskId: v.taskId, status: v.status as UpstreamTaskStatus };
  if (typeof v.statusMessage === 'string') task.statusMessage = v.statusMessage.slice(0, STATUS_MESSAGE_MAX);
  const ttl = era === 'modern' ? v.ttlMs : v.ttl;
  if (ttl === null) task.ttlMs = null;
  else if (typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0) task.ttlMs = Math.floor(ttl);
  const poll = era === 'modern' ? v.pollIntervalMs : v.pollInterval;
  if (typeof poll === 'number' && Number.isFinite(poll) && poll >= 0) task.pollIntervalMs = Math.floor(poll);
  if (era === 'modern') {
    if (task.status === 'completed') {
      if (v.result === null || typeof v.result !== 'object' || Array.isArray(v.result)) {
        if (method !== 'tools/call') throw bad('a completed task without its result');
      } else task.result = v.result as Record<string, unknown>;
    }
    if (task.status === 'failed') {
      const e = v.error as { code?: unknown; message?: unknown } | undefined;
      task.error = {
        code: typeof e?.code === 'number' ? e.code : -32603,
        message: typeof e?.message === 'string' ? e.message.slice(0, STATUS_MESSAGE_MAX) : 'the task failed',
      };
    }
    if (
      task.status === 'input_required' &&
      v.inputRequests !== null &&
      typeof v.inputRequests === 'object' &&
      !Array.isArray(v.inputRequests)
    ) {
      task.inputRequests = v.inputRequests as Record<string, unknown>;
    }
  }
  return task;
}

/** Where a task's requests go, from any instance: no connection object, only what the wire needs. */
export interface TaskWireTarget {
  era: 'modern' | 'legacy';
  url: URL;
  request: McpHttpRequest;
  /** The configured headers (auth). */
  headers: Record<string, string>;
  protocolVersion: string;
  /** A legacy task's session: its tasks live there. */
  sessionId?: string;
  clientInfo?: Implementation;
  capabilities?: ClientCapabilities;
  /** A legacy server's request pushed on a `tasks/result` stream (`elicitation/create` of an `input_required` task). */
  serverRequest?: LegacyTarget['serverRequest'];
}

export interface TaskRequestOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * The W3C trace context (`traceparent`, `tracestate`) of the span the request goes out under:
   * sent in its HTTP headers, and in a modern request's `_meta` too, as a `tools/call` carries it.
   */
  trace?: Record<string, string>;
}

let nextId = 0;

/**
 * One task request (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`): a POST of the
 * JSON-RPC request, its answer read as a `tools/call`'s is (JSON or SSE, bounded). Throws
 * {@link McpClientError} (`timeout`, `cancelled`, `transport_error`) or the server's
 * {@link ProtocolError}.
 */
export async function taskRequest(
  target: TaskWireTarget,
  method: string,
  params: Record<string, unknown>,
  opts: TaskRequestOptions,
): Promise<Record<string, unknown>> {
  const id = `mcpx-task-${++nextId}`;
  const clock = new CallClock(opts.timeoutMs, opts.signal);
  const { headers, sent } = taskWire(target, method, params, traceMeta(undefined, opts.trace));
  const legacy = legacySessionOf(target);
  const onOther =
    legacy === undefined
      ? undefined
      : (m: JsonRpcOther): void => (m.id !== undefined ? answerServerRequest(legacy, m, clock.signal) : undefined);
  const scanner = new SseResponseScanner(id, onOther);
  try {
    const res = await target.request(target.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: sent }),
      signal: clock.signal,
    });
    return resultObject(await readAnswer(res, scanner, target.era), target.era);
  } catch (err) {
    throw taskFailure(err, method, clock.why, target, opts.timeoutMs);
  } finally {
    clock.dispose();
  }
}

/**
 * Ends a 2025 task's session (`DELETE` with its `Mcp-Session-Id`) once the task has ended: the
 * connection that made the task was closed without ending it (a brokered task holds no
 * connection while it runs, docs/tasks.md#the-broker), so any instance can end it. True when the
 * server took it (2xx) or no longer knew it (404); false otherwise (best effort: the server's
 * idle timeout ends it then). Never throws.
 */
export async function endTaskSession(target: TaskWireTarget, timeoutMs: number): Promise<boolean> {
  if (target.era !== 'legacy' || target.sessionId === undefined) return false;
  const clock = new CallClock(timeoutMs, undefined);
  try {
    const res = await target.request(target.url, {
      method: 'DELETE',
      headers: {
        ...target.headers,
        'mcp-session-id': target.sessionId,
        'mcp-protocol-version': target.protocolVersion,
      },
      signal: clock.signal,
    });
    // A DELETE's answer is small: drained, never read.
    res.body.on('error', () => undefined);
    res.body.resume();
    return (res.statusCode >= 200 && res.statusCode < 300) || res.statusCode === 404;
  } catch {
    return false;
  } finally {
    clock.dispose();
  }
}

/**
 * A task request's headers and params: the modern `Mcp-Method`/`Mcp-Name` and `_meta`, or the
 * legacy session; the trace context (`trace`) in the headers and a modern request's `_meta`.
 */
function taskWire(
  target: TaskWireTarget,
  method: string,
  params: Record<string, unknown>,
  trace: Record<string, string> | undefined,
): { headers: Record<string, string>; sent: Record<string, unknown> } {
  const headers: Record<string, string> = {
    ...target.headers,
    ...trace,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': target.protocolVersion,
  };
  if (target.era === 'legacy') {
    if (target.sessionId !== undefined) headers['mcp-session-id'] = target.sessionId;
    return { headers, sent: params };
  }
  headers['mcp-method'] = method;
  // The task methods name their task in `Mcp-Name` (2026-07-28: the header mirrors `params.taskId`).
  if (typeof params.taskId === 'string') headers['mcp-name'] = encodeMcpParamValue(params.taskId);
  const sent = {
    ...params,
    _meta: {
      ...trace,
      [PROTOCOL_VERSION_META_KEY]: target.protocolVersion,
      [CLIENT_CAPABILITIES_META_KEY]: withTasksExtension(target.capabilities ?? {}),
      ...(target.clientInfo !== undefined ? { [CLIENT_INFO_META_KEY]: target.clientInfo } : {}),
    },
  };
  return { headers, sent };
}

/** The legacy session a request the server pushes on a task request's stream is answered on. */
function legacySessionOf(target: TaskWireTarget): LegacyTarget | undefined {
  if (target.era !== 'legacy' || target.sessionId === undefined) return undefined;
  return {
    era: 'legacy',
    url: target.url,
    request: target.request,
    headers: target.headers,
    sessionId: target.sessionId,
    protocolVersion: target.protocolVersion,
    cancelled: () => {},
    ...(target.serverRequest !== undefined ? { serverRequest: target.serverRequest } : {}),
  };
}

/** A failed task request as a typed error (the server's own `ProtocolError` passes as it is). */
function taskFailure(
  err: unknown,
  method: string,
  why: 'timeout' | 'cancelled' | undefined,
  target: TaskWireTarget,
  timeoutMs: number,
): McpClientError | ProtocolError {
  if (why === 'timeout')
    return new McpClientError(
      McpClientErrorCode.Timeout,
      `MCP ${method} timed out after ${timeoutMs} ms`,
      { transport: 'http' },
      { cause: err },
    );
  if (why === 'cancelled')
    return new McpClientError(
      McpClientErrorCode.Cancelled,
      `MCP ${method} cancelled`,
      { transport: 'http' },
      { cause: err },
    );
  if (err instanceof McpClientError || err instanceof ProtocolError) return err;
  const status = (err as { status?: unknown }).status;
  const detail = err instanceof Error ? err.message : String(err);
  // A legacy session the server no longer knows (it restarted, or ended it): its tasks went with it
  // (404, or SDK v1 servers' 400 "No valid session ID").
  if (target.era === 'legacy' && isSessionLost(err))
    return new McpClientError(
      McpClientErrorCode.SessionExpired,
      `MCP ${method}: the server no longer knows the session its task lives in`,
      { transport: 'http', ...(typeof status === 'number' ? { status } : {}) },
      { cause: err },
    );
  if (status === 401 || status === 403)
    return new McpClientError(
      McpClientErrorCode.Unauthorized,
      `MCP ${method}: the server refused the credentials (HTTP ${status})`,
      { transport: 'http', status },
      { cause: err },
    );
  return new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP ${method} failed: ${detail.slice(0, 300)}`,
    { transport: 'http', ...(typeof status === 'number' ? { status } : {}) },
    { cause: err },
  );
}
