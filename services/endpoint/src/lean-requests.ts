// Which requests the lean tools/call path serves (./lean-calls.ts): judged from the headers, then
// from the body; anything it does not take goes to the SDK's path as it is.
import type { IncomingMessage } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import type { McpToolDocument } from '@mcpx/domain';
import { FACE_PATH_RE } from './faces.js';
import { checkHost } from './request-head.js';
import type { TokenFailures } from './token-failures.js';

const MODERN_VERSION = '2026-07-28';
const LEGACY_VERSIONS = new Set<string>(SUPPORTED_PROTOCOL_VERSIONS);
/** Bodies the lean path takes; a larger one (or one without a length) goes to the SDK as it is. */
const LEAN_MAX_BODY = 256 * 1024;
const PARAM_KEYS = new Set(['name', 'arguments', '_meta']);
/** A 2025 call may also ask for a task (`params.task`, an object: its `ttl` is the connector's to bound). */
const LEGACY_PARAM_KEYS = new Set([...PARAM_KEYS, 'task']);
const BODY_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A header's one value (a repeated one: undefined, the SDK's path judges it). */
export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? undefined : v;
}

/** Whether a tool declares `x-mcp-header` parameters (the SDK checks their mirrored headers: its path serves it). */
const mirrored = new WeakMap<McpToolDocument, boolean>();
export function mirrorsHeaders(doc: McpToolDocument): boolean {
  let v = mirrored.get(doc);
  if (v === undefined) mirrored.set(doc, (v = JSON.stringify(doc.inputSchema ?? {}).includes('x-mcp-header')));
  return v;
}

/** A `tools/call` the lean path may serve, as its body says it. */
export interface LeanRequestCall {
  id: string | number;
  name: string;
  arguments: Json;
  meta: Json | undefined;
  /** The client's declared capabilities (2026-07-28: in `_meta`; 2025: none here, its initialize's). */
  caps: Json;
  /** A 2025 call that asks for a task (`params.task`). */
  asksTask?: boolean;
}

/** A POST the lean path may serve, judged from its headers alone: the body's length and the era. */
export function leanCandidate(
  req: IncomingMessage,
  clientAddress: string,
  d: { allowedHosts: readonly string[]; failures: TokenFailures },
): { length: number; modern: boolean } | undefined {
  if (req.method !== 'POST') return undefined;
  const target = req.url ?? '';
  const q = target.indexOf('?');
  if (!FACE_PATH_RE.test(q < 0 ? target : target.slice(0, q))) return undefined;
  if (!(header(req, 'content-type') ?? '').startsWith('application/json')) return undefined;
  const length = Number(header(req, 'content-length'));
  if (!Number.isSafeInteger(length) || length <= 0 || length > LEAN_MAX_BODY) return undefined;
  // Browsers (an Origin) and mirrored tool parameters: the SDK's path checks them. A session id
  // is a 2025 client's (the endpoint issued it at initialize; the serving is stateless).
  if (
    req.headers.origin !== undefined ||
    (req.headers['mcp-session-id'] !== undefined && header(req, 'mcp-method') !== undefined)
  )
    return undefined;
  for (const name of Object.keys(req.headers)) if (name.startsWith('mcp-param-')) return undefined;
  const method = header(req, 'mcp-method');
  const version = header(req, 'mcp-protocol-version');
  const accept = header(req, 'accept') ?? '';
  let modern: boolean;
  if (method !== undefined) {
    if (method !== 'tools/call' || version !== MODERN_VERSION || !accept.includes('application/json')) return undefined;
    modern = true;
  } else {
    if (version !== undefined && !LEGACY_VERSIONS.has(version)) return undefined;
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
    modern = false;
  }
  if (!checkHost(header(req, 'host') ?? null, d.allowedHosts).ok) return undefined;
  if (d.failures.blocked(clientAddress) !== undefined) return undefined;
  return { length, modern };
}

/**
 * A 2025 POST the lean path serves whatever else sent it to the SDK's path, judged from its
 * headers: a `tasks/result` or an answer to a question asked on one (docs/tasks.md#questions),
 * which the SDK's stateless serving cannot ask or take. Its `Origin` was checked at admission
 * (the answer then carries the CORS headers admission gave it); its body was read within the
 * inbound bounds, with or without a length.
 */
export function legacyTaskCandidate(
  req: IncomingMessage,
  clientAddress: string,
  d: { allowedHosts: readonly string[]; failures: TokenFailures },
): boolean {
  if (req.method !== 'POST' || header(req, 'mcp-method') !== undefined) return false;
  const target = req.url ?? '';
  const q = target.indexOf('?');
  if (!FACE_PATH_RE.test(q < 0 ? target : target.slice(0, q))) return false;
  if (!(header(req, 'content-type') ?? '').startsWith('application/json')) return false;
  const version = header(req, 'mcp-protocol-version');
  if (version !== undefined && !LEGACY_VERSIONS.has(version)) return false;
  const accept = header(req, 'accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  if (!checkHost(header(req, 'host') ?? null, d.allowedHosts).ok) return false;
  return d.failures.blocked(clientAddress) === undefined;
}

/** The call of a body that is exactly one `tools/call` the SDK would take; else undefined. */
export function leanCallOf(msg: Json, modern: boolean, req: IncomingMessage): LeanRequestCall | undefined {
  if (
    msg.jsonrpc !== '2.0' ||
    msg.method !== 'tools/call' ||
    (typeof msg.id !== 'string' && typeof msg.id !== 'number')
  )
    return undefined;
  for (const k of Object.keys(msg)) if (!BODY_KEYS.has(k)) return undefined;
  const params = msg.params;
  if (!isObject(params) || typeof params.name !== 'string') return undefined;
  for (const k of Object.keys(params)) if (!(modern ? PARAM_KEYS : LEGACY_PARAM_KEYS).has(k)) return undefined;
  if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
  if (params.task !== undefined && !isObject(params.task)) return undefined;
  const meta = params._meta;
  // Progress and log messages stream: the SDK's path.
  if (
    meta !== undefined &&
    (!isObject(meta) || meta.progressToken !== undefined || meta['io.modelcontextprotocol/logLevel'] !== undefined)
  )
    return undefined;
  let caps: Json = {};
  if (modern) {
    if (
      meta === undefined ||
      meta['io.modelcontextprotocol/protocolVersion'] !== MODERN_VERSION ||
      header(req, 'mcp-name') !== params.name
    )
      return undefined;
    const declared = meta['io.modelcontextprotocol/clientCapabilities'];
    const info = meta['io.modelcontextprotocol/clientInfo'];
    if (!isObject(declared) || !isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string')
      return undefined;
    caps = declared;
  } else if (meta !== undefined && 'io.modelcontextprotocol/protocolVersion' in meta) return undefined;
  return {
    id: msg.id,
    name: params.name,
    arguments: params.arguments ?? {},
    meta,
    caps,
    ...(params.task !== undefined ? { asksTask: true } : {}),
  };
}

/** The task id of a 2025 `tasks/result` whose body is exactly that request; else undefined. */
export function legacyTaskResultOf(msg: Json): { id: string | number; taskId: string } | undefined {
  if (
    msg.jsonrpc !== '2.0' ||
    msg.method !== 'tasks/result' ||
    (typeof msg.id !== 'string' && typeof msg.id !== 'number')
  )
    return undefined;
  for (const k of Object.keys(msg)) if (!BODY_KEYS.has(k)) return undefined;
  const params = msg.params;
  if (!isObject(params) || typeof params.taskId !== 'string' || params.taskId.length > 256) return undefined;
  // The SDK v1 client sends its call's `task` along (nothing to it here).
  for (const k of Object.keys(params)) if (k !== 'taskId' && k !== '_meta' && k !== 'task') return undefined;
  return { id: msg.id, taskId: params.taskId };
}
