// The answers the endpoint gives from a request's head alone: refusals (JSON-RPC errors without an
// id, the connector's codes in their data), the CORS preflight, and the CORS headers an answer carries.
import type { StreamRefusal } from './stream-slots.js';

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A JSON-RPC error body with no id (the request was refused before it was read). */
export function rpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  data?: Record<string, unknown>,
): Response {
  return json(
    status,
    { jsonrpc: '2.0', error: { code, message, ...(data !== undefined ? { data } : {}) }, id: null },
    headers,
  );
}

/**
 * An address over its failed-token limit: 429 with `Retry-After` (whole seconds) and the
 * connector's `rate_limited` in the error's data, naming the field (`authorization`) and the limit.
 */
export function tooManyFailures(retryAfterMs: number, cors: Record<string, string>): Response {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return rpcError(
    429,
    -32000,
    'Too many requests: too many failed token attempts from this address; retry later',
    { 'retry-after': String(seconds), ...cors },
    {
      code: 'rate_limited',
      details: { field: 'authorization', limit: 'token_failures_per_address', retryAfterMs },
    },
  );
}

export function tooManyStreams(r: StreamRefusal, cors: Record<string, string>): Response {
  return rpcError(r.status, -32000, r.message, { 'retry-after': String(r.retryAfterSeconds), ...cors }, r.data);
}

export function corsHeaders(origin: string | null, corsOrigins: readonly string[]): Record<string, string> {
  if (origin === null || !corsOrigins.includes(origin)) return {};
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': 'mcp-session-id, mcp-protocol-version, www-authenticate',
    vary: 'Origin',
  };
}

export function withHeaders(res: Response, headers: Record<string, string>): Response {
  if (Object.keys(headers).length === 0) return res;
  const h = new Headers(res.headers);
  for (const [k, v] of Object.entries(headers)) h.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
}

/** The headers of a CORS preflight's answer (only for configured origins: `cors` is empty for others). */
export function preflight(cors: Record<string, string>): Response {
  if (Object.keys(cors).length === 0)
    return new Response(null, { status: 405, headers: { allow: 'GET, POST, DELETE' } });
  return new Response(null, {
    status: 204,
    headers: {
      ...cors,
      'access-control-allow-methods': 'GET, POST, DELETE',
      'access-control-allow-headers':
        'authorization, content-type, accept, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id, traceparent, tracestate',
      'access-control-max-age': '600',
    },
  });
}

/** A face path's agent and server segments, percent-decoded; a segment that does not decode is refused (400) naming it. */
export function faceNames(
  m: { agent: string; server?: string },
  cors: Record<string, string>,
): { agent: string; server: string | undefined } | Response {
  let agent: string;
  try {
    agent = decodeURIComponent(m.agent);
  } catch {
    return json(
      400,
      { error: { code: 'invalid_input', message: 'agent: not a valid path segment', details: { field: 'agent' } } },
      cors,
    );
  }
  try {
    return { agent, server: m.server === undefined ? undefined : decodeURIComponent(m.server) };
  } catch {
    return json(
      400,
      { error: { code: 'invalid_input', message: 'server: not a valid path segment', details: { field: 'server' } } },
      cors,
    );
  }
}
