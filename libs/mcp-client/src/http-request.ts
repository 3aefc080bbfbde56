import { Readable } from 'node:stream';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';

/**
 * The explicit lower-level HTTP request the library's own `tools/call` path sends with (both
 * eras: the modern POST, the legacy session POST and its resumption GET). `@mcpx/outbound`'s
 * `request` fits it (same checked connection pool, no WHATWG Request/Response, no web streams).
 * Passed as `ConnectMcpOptions.request`; without one, {@link fetchAsRequest} adapts the
 * connection's fetch, so there is one reader per body kind either way. It never follows
 * redirects (a 3xx fails the call); a failure before the response is a `TypeError('fetch
 * failed')` like fetch's.
 */
export type McpHttpRequest = (url: URL, opts: McpHttpRequestOptions) => Promise<RawResponse>;

export interface McpHttpRequestOptions {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

export interface RawResponse {
  statusCode: number;
  /** Lower-cased names. */
  headers: Record<string, string | string[] | undefined>;
  body: RawBody;
}

export type RawBody = NodeJS.ReadableStream & { destroy(error?: Error): unknown };

/** A {@link McpHttpRequest} over a fetch: the body becomes a Node stream, redirects are not followed. */
export function fetchAsRequest(fetchFn: typeof fetch): McpHttpRequest {
  return async (url, opts) => {
    const init: RequestInit = { method: opts.method, headers: opts.headers, redirect: 'manual' };
    if (opts.body !== undefined) init.body = opts.body;
    if (opts.signal !== undefined) init.signal = opts.signal;
    const response = await fetchFn(url, init);
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body: RawBody =
      response.body === null ? Readable.from([]) : Readable.fromWeb(response.body as NodeWebReadableStream<Uint8Array>);
    return { statusCode: response.status, headers, body };
  };
}
