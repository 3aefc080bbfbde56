import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  type CallToolRequest,
  type CallToolResult,
  type ClientCapabilities,
  type Implementation,
  type Progress,
  type Tool,
} from '@modelcontextprotocol/client';
import {
  discard,
  findResponse,
  header,
  mediaType,
  readErrorText,
  readJsonBody,
  readSseResponse,
  SseResponseScanner,
  type JsonRpcOther,
  type JsonRpcResponse,
} from './body-reader.js';
import {
  callRan,
  classifyMcpError,
  HttpStatusError,
  McpClientError,
  McpClientErrorCode,
  McpClientRan,
  type ClassifyContext,
} from './errors.js';
import type { McpHttpRequest, RawResponse } from './http-request.js';
import { mcpParamHeaders, encodeMcpParamValue } from './mcp-param-headers.js';
import { resumeResponse } from './sse-resume.js';
import { withTasksExtension } from './tasks.js';

/**
 * The library's one `tools/call` path, for both eras, beside the SDK client that owns the rest of
 * the connection (discovery or the handshake, listing, `subscriptions/listen`, a legacy session's
 * GET stream and notifications). One POST of the JSON-RPC request through an explicit
 * {@link McpHttpRequest}; the answer is read by the one reader of its body kind (JSON or SSE).
 * Why not the SDK's `callTool`: it costs more than the whole rest of a proxied call (WHATWG
 * Request/Response objects, web streams, a zod parse of every result, per-request abort
 * plumbing; see BENCHMARKS.md), and a pass-through proxy needs none of it (results are untrusted
 * and bounded downstream).
 *
 * Modern (2026-07-28), as the SDK sends it: `MCP-Protocol-Version`, `Mcp-Method: tools/call`,
 * `Mcp-Name`, one `Mcp-Param-<Name>` per `x-mcp-header` parameter of the listed tool (same value
 * encoding), the configured headers (auth); `_meta` with the protocol version, the client's
 * capabilities and info and the caller's `traceparent`/`tracestate`. The result's `resultType` is
 * checked: `complete` (or absent: SEP-2322 says a client assumes complete) is a result,
 * `input_required` is handed back intact (it must carry `inputRequests` or `requestState`),
 * anything else is refused with `protocol_error`. A response stream
 * that breaks after the request went out fails with `maybe_executed` (no resumption in 2026-07-28).
 *
 * Legacy (2025-11-25 session): the session headers; a broken stream after an event id is resumed
 * with `Last-Event-ID` (`sse-resume.ts`), without one it fails with `transport_error`.
 *
 * Request ids are strings (`mcpx-N`), so they never collide with the SDK's numeric ids.
 */
export type ToolCallTarget = ModernTarget | LegacyTarget;

interface TargetBase {
  url: URL;
  request: McpHttpRequest;
  /** The configured static headers (auth). */
  headers: Record<string, string>;
}

export interface ModernTarget extends TargetBase {
  era: 'modern';
  protocolVersion: string;
  capabilities: ClientCapabilities;
  clientInfo: Implementation;
  /** `traceparent`/`tracestate` of the active trace, for `_meta`. */
  traceMeta: () => Record<string, string> | undefined;
}

export interface LegacyTarget extends TargetBase {
  era: 'legacy';
  sessionId: string;
  protocolVersion: string | undefined;
  /** Sends `notifications/cancelled` for a request id on the session (best effort). */
  cancelled(requestId: string, reason: string): void;
  /**
   * Answers a request the server pushes on the call's response stream (2025-11-25: e.g.
   * `elicitation/create`), resolving with the JSON-RPC `result` or rejecting with the error;
   * the answer is POSTed back on the session. Unset: every such request is refused (-32601).
   */
  serverRequest?: (method: string, params: unknown, signal: AbortSignal) => Promise<unknown>;
}

export interface ToolCallOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** The listed definition: its `x-mcp-header` parameters become `Mcp-Param-*` headers (modern). */
  tool?: Tool;
  /** Asks for progress (a `progressToken` in `_meta`); told of each `notifications/progress`. */
  onProgress?: (progress: Progress) => void;
  /** Restart the timeout on each progress notification. */
  resetTimeoutOnProgress?: boolean;
  /** Told when a broken legacy response stream was resumed, or could not be. */
  onResume?: (outcome: 'resumed' | 'failed') => void;
  /** Capabilities this call declares beyond the target's (modern: merged into `_meta`). */
  capabilities?: ClientCapabilities;
  /** Capabilities this call declares instead of the target's (modern); `capabilities` is then not used. */
  onlyCapabilities?: ClientCapabilities;
  /** How the connection classifies a failure (secrets to scrub, the last challenge, the era). */
  classify?: ClassifyContext;
  /** A task-augmented modern call: the tasks extension is declared in `_meta` (docs/tasks.md). */
  tasks?: boolean;
  /**
   * The least severe log level the caller wants of this call (modern: `_meta` logLevel; a legacy
   * session's level is set beforehand by the connection). Unset: a modern server logs nothing.
   */
  logLevel?: string;
  /** Told of each `notifications/message` on the call's response stream (unchecked: the caller bounds it). */
  onLog?: (params: unknown) => void;
}

/** A modern `input_required` result as the server sent it, with the resultType checked. */
export interface InputRequiredWire {
  resultType: 'input_required';
  inputRequests?: Record<string, unknown>;
  requestState?: string;
  _meta?: Record<string, unknown>;
}

let nextId = 0;

/** `traceparent`/`tracestate` of the caller's carrier, as `_meta` keys (2026-07-28 names them so). */
export function traceMeta(carrier: (() => Record<string, string>) | undefined): Record<string, string> | undefined {
  if (carrier === undefined) return undefined;
  let values: Record<string, string>;
  try {
    values = carrier();
  } catch {
    return undefined;
  }
  const meta: Record<string, string> = {};
  if (typeof values.traceparent === 'string') meta.traceparent = values.traceparent;
  if (typeof values.tracestate === 'string') meta.tracestate = values.tracestate;
  return Object.keys(meta).length === 0 ? undefined : meta;
}

export async function toolCall(
  target: ToolCallTarget,
  params: CallToolRequest['params'],
  opts: ToolCallOptions,
): Promise<CallToolResult | InputRequiredWire> {
  const id = `mcpx-${++nextId}`;
  const controller = new AbortController();
  let why: 'timeout' | 'cancelled' | undefined;
  const onTimeout = (): void => {
    why = 'timeout';
    controller.abort();
  };
  let timer = setTimeout(onTimeout, opts.timeoutMs);
  const outer = opts.signal;
  const onAbort = (): void => {
    why ??= 'cancelled';
    controller.abort();
  };
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });

  const progressToken = opts.onProgress !== undefined || opts.resetTimeoutOnProgress === true ? id : undefined;
  const onOther =
    progressToken === undefined && target.era === 'modern' && opts.onLog === undefined
      ? undefined
      : (m: JsonRpcOther): void => {
          if (target.era === 'legacy' && m.id !== undefined) {
            answerServerRequest(target, m, controller.signal);
            return;
          }
          if (m.method === 'notifications/message') {
            opts.onLog?.(m.params);
            return;
          }
          const p = m.params as ({ progressToken?: unknown } & Progress) | undefined;
          if (
            progressToken === undefined ||
            m.method !== 'notifications/progress' ||
            p?.progressToken !== progressToken
          )
            return;
          if (opts.resetTimeoutOnProgress && why === undefined) {
            clearTimeout(timer);
            timer = setTimeout(onTimeout, opts.timeoutMs);
          }
          const { progressToken: _token, ...progress } = p;
          opts.onProgress?.(progress);
        };
  const { headers, body } =
    target.era === 'modern'
      ? modernRequest(target, id, params, opts, progressToken)
      : legacyRequest(target, id, params, progressToken);
  const scanner = new SseResponseScanner(id, onOther);
  let sent = false;
  try {
    let message: JsonRpcResponse | undefined;
    let broke: unknown;
    try {
      const res = await target.request(target.url, { method: 'POST', headers, body, signal: controller.signal });
      sent = true;
      message = await readAnswer(res, scanner, target.era);
    } catch (err) {
      // Only a legacy event stream that got as far as an event id can be resumed.
      if (
        target.era === 'modern' ||
        scanner.lastEventId === undefined ||
        controller.signal.aborted ||
        err instanceof McpClientError
      )
        throw err;
      broke = err;
    }
    if (message === undefined && target.era === 'legacy' && scanner.lastEventId !== undefined) {
      try {
        message = await resumeResponse(target, scanner, controller.signal, broke);
      } catch (err) {
        opts.onResume?.('failed');
        throw err;
      }
      opts.onResume?.('resumed');
    }
    return target.era === 'modern' ? modernResult(message, opts.tasks === true) : legacyResult(message);
  } catch (err) {
    // Every failure leaves as an McpClientError saying what may have run (set here, where it is known).
    if (why === 'timeout') {
      if (target.era === 'legacy' && (sent || controller.signal.aborted)) target.cancelled(id, 'timeout');
      throw new McpClientError(
        McpClientErrorCode.Timeout,
        `MCP request timed out after ${opts.timeoutMs} ms`,
        { transport: 'http', ran: McpClientRan.Maybe },
        { cause: err },
      );
    }
    if (why === 'cancelled') {
      // Modern: closing the request's connection is the cancellation (no session to notify).
      if (target.era === 'legacy') target.cancelled(id, 'cancelled by the caller');
      throw new McpClientError(
        McpClientErrorCode.Cancelled,
        'MCP request cancelled',
        { transport: 'http', ran: McpClientRan.Maybe },
        { cause: err },
      );
    }
    if (
      sent &&
      !(err instanceof McpClientError) &&
      !(err instanceof ProtocolError) &&
      !(err instanceof HttpStatusError)
    ) {
      // The request reached the server and the answer broke off: it may have run.
      const detail = err instanceof Error ? err.message : String(err);
      if (target.era === 'modern') throw maybeExecuted(detail, err);
      throw new McpClientError(
        McpClientErrorCode.TransportError,
        `MCP connection dropped during the call (the server may have executed it): ${detail}`,
        { transport: 'http', ran: McpClientRan.Maybe },
        { cause: err },
      );
    }
    throw classifyMcpError(err, undefined, { ...opts.classify, ran: callRan(err, sent) });
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
}

function maybeExecuted(detail: string, cause: unknown): McpClientError {
  return new McpClientError(
    McpClientErrorCode.MaybeExecuted,
    `MCP response stream broke after the call was sent: the server may have executed it (2026-07-28 has no resumption); not retried (${detail})`,
    { transport: 'http' },
    cause === undefined ? undefined : { cause },
  );
}

/**
 * A request the server pushed on a legacy call's stream: answered (by `serverRequest`, `ping`
 * with `{}`, anything else with -32601) by a POST on the session, in the background. The call's
 * signal aborts the handler when the call ends first.
 */
export function answerServerRequest(target: LegacyTarget, m: JsonRpcOther, signal: AbortSignal): void {
  const id = m.id;
  if (typeof id !== 'string' && typeof id !== 'number') return;
  const respond = (answer: { result: unknown } | { error: { code: number; message: string } }): void => {
    const headers: Record<string, string> = {
      ...target.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': target.sessionId,
    };
    if (target.protocolVersion !== undefined) headers['mcp-protocol-version'] = target.protocolVersion;
    target
      .request(target.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, ...answer }) })
      .then((res) => discard(res.body))
      .catch(() => {});
  };
  const handler = target.serverRequest;
  if (m.method === 'ping') return respond({ result: {} });
  if (handler === undefined)
    return respond({ error: { code: -32601, message: `Method not found: ${m.method.slice(0, 64)}` } });
  handler(m.method, m.params, signal).then(
    (result) => respond({ result }),
    (err: unknown) => {
      const code = err instanceof ProtocolError ? err.code : -32603;
      respond({ error: { code, message: err instanceof Error ? err.message.slice(0, 300) : 'error' } });
    },
  );
}

/** The modern POST: standard headers, `Mcp-Param-*`, the `_meta` envelope. */
function modernRequest(
  target: ModernTarget,
  id: string,
  params: CallToolRequest['params'],
  opts: ToolCallOptions,
  progressToken: string | undefined,
): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    ...target.headers,
    ...(opts.tool !== undefined ? mcpParamHeaders(opts.tool.inputSchema, params.arguments) : {}),
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': target.protocolVersion,
    'mcp-method': 'tools/call',
    'mcp-name': encodeMcpParamValue(params.name),
  };
  const meta: Record<string, unknown> = {
    ...target.traceMeta(),
    ...params._meta,
    ...(progressToken !== undefined ? { progressToken } : {}),
    ...(opts.logLevel !== undefined ? { [LOG_LEVEL_META_KEY]: opts.logLevel } : {}),
    [PROTOCOL_VERSION_META_KEY]: target.protocolVersion,
    [CLIENT_CAPABILITIES_META_KEY]: callCapabilities(target.capabilities, opts),
    [CLIENT_INFO_META_KEY]: target.clientInfo,
  };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { ...params, _meta: meta } });
  return { headers, body };
}

function legacyRequest(
  target: LegacyTarget,
  id: string,
  params: CallToolRequest['params'],
  progressToken: string | undefined,
): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    ...target.headers,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': target.sessionId,
  };
  if (target.protocolVersion !== undefined) headers['mcp-protocol-version'] = target.protocolVersion;
  const sent = progressToken === undefined ? params : { ...params, _meta: { ...params._meta, progressToken } };
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: sent }) };
}

/**
 * The answer: status, then the JSON body or the SSE stream up to our response. A non-2xx is an
 * {@link HttpStatusError} (a 3xx too: redirects are not followed on the call path), except a
 * modern answer whose body is a JSON-RPC error (e.g. -32022, -32020): that is the
 * server's {@link ProtocolError}, as the SDK delivers it (HTTP 400 whose body is the error
 * response to our id).
 */
export async function readAnswer(
  res: RawResponse,
  scanner: SseResponseScanner,
  era: 'modern' | 'legacy',
): Promise<JsonRpcResponse | undefined> {
  const { statusCode, body } = res;
  if (statusCode < 200 || statusCode > 299) {
    const text = await readErrorText(body);
    if (era === 'modern' && statusCode === 400) {
      const rpc = jsonRpcErrorOf(text, scanner.id);
      if (rpc !== undefined) throw rpc;
    }
    throw new HttpStatusError(
      statusCode,
      `Error POSTing to endpoint: ${text}`,
      header(res.headers, 'www-authenticate'),
    );
  }
  const type = mediaType(header(res.headers, 'content-type'));
  if (type === 'application/json') return findResponse(await readJsonBody(res), scanner.id);
  if (type === 'text/event-stream') return readSseResponse(body, scanner);
  discard(body);
  throw new McpClientError(
    McpClientErrorCode.TransportError,
    `MCP server answered tools/call with an unexpected content type: ${type || '(none)'}`,
    { transport: 'http' },
  );
}

function jsonRpcErrorOf(text: string, id: string): ProtocolError | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if ((parsed as JsonRpcResponse | null)?.id !== id) return undefined;
  const e = (parsed as JsonRpcResponse | null)?.error;
  if (e === null || typeof e !== 'object' || typeof e.code !== 'number') return undefined;
  return new ProtocolError(e.code, typeof e.message === 'string' ? e.message : 'error', e.data);
}

export function resultObject(message: JsonRpcResponse | undefined, era: 'modern' | 'legacy'): Record<string, unknown> {
  if (message === undefined) {
    if (era === 'modern') throw maybeExecuted('the response stream ended before the result', undefined);
    throw new McpClientError(
      McpClientErrorCode.TransportError,
      'MCP response ended before the result, with no event id to resume from: the server may have executed the call',
      {
        transport: 'http',
        ran: McpClientRan.Maybe,
      },
    );
  }
  if (message.error !== undefined) {
    const e = message.error;
    throw new ProtocolError(
      typeof e.code === 'number' ? e.code : -32603,
      typeof e.message === 'string' ? e.message : 'error',
      e.data,
    );
  }
  const result = message.result;
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    throw new McpClientError(
      McpClientErrorCode.TransportError,
      'MCP server answered tools/call with a result that is not an object',
      { transport: 'http' },
    );
  }
  return result as Record<string, unknown>;
}

function legacyResult(message: JsonRpcResponse | undefined): CallToolResult {
  return resultObject(message, 'legacy') as CallToolResult;
}

/** A modern result, its `resultType` checked as the SDK's 2026-07-28 codec does. */
function modernResult(message: JsonRpcResponse | undefined, tasks: boolean): CallToolResult | InputRequiredWire {
  const result = resultObject(message, 'modern');
  const type = result.resultType;
  // Absent means complete (SEP-2322: "the client MUST assume complete"; the conformance suite
  // holds clients to it, though the SDK's own codec refuses such a modern result).
  if (type === 'complete' || type === undefined) {
    const { resultType: _complete, ...rest } = result;
    if (rest.content !== undefined && !Array.isArray(rest.content)) throw invalidResult('content is not an array');
    return rest as CallToolResult;
  }
  if (type === 'input_required') {
    const requests = result.inputRequests;
    const state = result.requestState;
    const hasRequests =
      requests !== null && typeof requests === 'object' && !Array.isArray(requests) && Object.keys(requests).length > 0;
    if (!hasRequests && typeof state !== 'string')
      throw invalidResult('input_required carries neither inputRequests nor requestState');
    if (requests !== undefined && !(requests !== null && typeof requests === 'object' && !Array.isArray(requests)))
      throw invalidResult('inputRequests is not an object');
    if (state !== undefined && typeof state !== 'string') throw invalidResult('requestState is not a string');
    return result as unknown as InputRequiredWire;
  }
  // A task the call created: only when the call declared the tasks extension (a task-augmented
  // call); the caller reads it with `createdTaskOf`. Unasked, a task is as unsupported as any.
  if (type === 'task' && tasks) return result as unknown as CallToolResult;
  throw invalidResult(
    typeof type === 'string'
      ? `an unsupported resultType ${JSON.stringify(type.slice(0, 64))}`
      : 'a resultType that is not a string',
  );
}

function invalidResult(why: string): McpClientError {
  return new McpClientError(
    McpClientErrorCode.ProtocolError,
    `MCP server answered tools/call with an invalid result: ${why}`,
    { transport: 'http' },
  );
}

/** What a call declares: the connection's capabilities, the call's own on top (or instead), the tasks extension when it asks for a task. */
function callCapabilities(
  base: ClientCapabilities,
  opts: { capabilities?: ClientCapabilities; onlyCapabilities?: ClientCapabilities; tasks?: boolean },
): ClientCapabilities {
  const merged = opts.onlyCapabilities ?? (opts.capabilities === undefined ? base : { ...base, ...opts.capabilities });
  return opts.tasks === true ? withTasksExtension(merged) : merged;
}
