/** What the call path POSTs: the `tools/call` request of each era, and the answer to a request a legacy server pushed. */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  type CallToolRequest,
  type ClientCapabilities,
} from '@modelcontextprotocol/client';
import { discard, type JsonRpcOther } from './body-reader.js';
import type { LegacyTarget, ModernTarget, ToolCallOptions } from './call-target.js';
import { mcpParamHeaders, encodeMcpParamValue } from './mcp-param-headers.js';
import { withTasksExtension } from './tasks.js';

/**
 * `traceparent`/`tracestate` of a W3C carrier: the request's own (`trace`), else the one the
 * connection's carrier function reads when the request is made. The same keys name them in an
 * HTTP header block and in a 2026-07-28 request's `_meta`.
 */
export function traceMeta(
  carrier: (() => Record<string, string>) | undefined,
  trace?: Record<string, string>,
): Record<string, string> | undefined {
  if (trace === undefined && carrier === undefined) return undefined;
  let values: Record<string, string>;
  try {
    values = trace ?? carrier!();
  } catch {
    return undefined;
  }
  const meta: Record<string, string> = {};
  if (typeof values.traceparent === 'string') meta.traceparent = values.traceparent;
  if (typeof values.tracestate === 'string') meta.tracestate = values.tracestate;
  return Object.keys(meta).length === 0 ? undefined : meta;
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
    const headers = sessionHeaders(target);
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

/**
 * The modern POST: standard headers, `Mcp-Param-*`, the `_meta` envelope. Built by assignment,
 * not by spreading into literals: on the call path the spreads cost several microseconds a call
 * (Node 20's object spread of several sources takes V8's slow path), the assignments a tenth of it.
 */
export function modernRequest(
  target: ModernTarget,
  id: string,
  params: CallToolRequest['params'],
  opts: ToolCallOptions,
  progressToken: string | undefined,
): { headers: Record<string, string>; body: string } {
  const trace = opts.trace === undefined ? target.traceMeta() : traceMeta(undefined, opts.trace);
  const headers: Record<string, string> = {};
  copyOwn(headers, target.headers);
  if (opts.trace !== undefined && trace !== undefined) copyOwn(headers, trace);
  if (opts.tool !== undefined) copyOwn(headers, mcpParamHeaders(opts.tool.inputSchema, params.arguments));
  headers['content-type'] = 'application/json';
  headers.accept = 'application/json, text/event-stream';
  headers['mcp-protocol-version'] = target.protocolVersion;
  headers['mcp-method'] = 'tools/call';
  headers['mcp-name'] = encodeMcpParamValue(params.name);
  const meta: Record<string, unknown> = {};
  if (trace !== undefined) copyOwn(meta, trace);
  if (params._meta !== undefined) copyOwn(meta, params._meta);
  if (progressToken !== undefined) meta.progressToken = progressToken;
  if (opts.logLevel !== undefined) meta[LOG_LEVEL_META_KEY] = opts.logLevel;
  meta[PROTOCOL_VERSION_META_KEY] = target.protocolVersion;
  meta[CLIENT_CAPABILITIES_META_KEY] = callCapabilities(target.capabilities, opts);
  meta[CLIENT_INFO_META_KEY] = target.clientInfo;
  const sent: Record<string, unknown> = {};
  copyOwn(sent, params);
  sent._meta = meta;
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: sent });
  return { headers, body };
}

/**
 * Copies `source`'s own enumerable properties onto `into` as a spread would: as data properties,
 * a `__proto__` key (from a caller's `_meta`, a connection's header) included as an own property,
 * never as the object's prototype.
 */
function copyOwn(into: Record<string, unknown>, source: object): void {
  for (const key of Object.keys(source)) {
    const value = (source as Record<string, unknown>)[key];
    if (key === '__proto__')
      Object.defineProperty(into, key, { value, enumerable: true, writable: true, configurable: true });
    else into[key] = value;
  }
}

export function legacyRequest(
  target: LegacyTarget,
  id: string,
  params: CallToolRequest['params'],
  progressToken: string | undefined,
  trace?: Record<string, string>,
): { headers: Record<string, string>; body: string } {
  const headers = sessionHeaders(target);
  if (trace !== undefined) Object.assign(headers, traceMeta(undefined, trace));
  const sent = progressToken === undefined ? params : { ...params, _meta: { ...params._meta, progressToken } };
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: sent }) };
}

/** The headers of a POST on a legacy session: the connection's own, the session, its negotiated version. */
function sessionHeaders(target: LegacyTarget): Record<string, string> {
  const headers: Record<string, string> = {};
  copyOwn(headers, target.headers);
  headers['content-type'] = 'application/json';
  headers.accept = 'application/json, text/event-stream';
  headers['mcp-session-id'] = target.sessionId;
  if (target.protocolVersion !== undefined) headers['mcp-protocol-version'] = target.protocolVersion;
  return headers;
}

/** What a call declares: the connection's capabilities, the call's own on top (or instead), the tasks extension when it asks for a task. */
function callCapabilities(
  base: ClientCapabilities,
  opts: { capabilities?: ClientCapabilities; onlyCapabilities?: ClientCapabilities; tasks?: boolean },
): ClientCapabilities {
  const merged = opts.onlyCapabilities ?? (opts.capabilities === undefined ? base : { ...base, ...opts.capabilities });
  return opts.tasks === true ? withTasksExtension(merged) : merged;
}
