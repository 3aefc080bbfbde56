import { Readable } from 'node:stream';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';

/**
 * The explicit lower-level request the legacy direct call path sends its POST and resumption GET
 * with (`@mcpx/outbound`'s `request` fits: same connection pool and outbound checks, no WHATWG
 * Request/Response). Passed as `ConnectMcpOptions.request`; without one, {@link fetchAsRequest}
 * adapts the connection's fetch, so there is one reader per body kind either way. It never
 * follows redirects (a 3xx fails the call); a failure before the response is a
 * `TypeError('fetch failed')` like fetch's.
 */
export type DirectRequest = (
  url: URL,
  opts: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<RawResponse>;

export interface RawResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: RawBody;
}

export type RawBody = NodeJS.ReadableStream & { destroy(error?: Error): unknown };

/** A {@link DirectRequest} over a fetch: the body becomes a Node stream, redirects are not followed. */
export function fetchAsRequest(fetchFn: typeof fetch): DirectRequest {
  return async (url, opts) => {
    const init: RequestInit = { method: opts.method, headers: opts.headers, redirect: 'manual' };
    if (opts.body !== undefined) init.body = opts.body;
    if (opts.signal !== undefined) init.signal = opts.signal;
    const response = await fetchFn(url, init);
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body: RawBody = response.body === null ? Readable.from([]) : Readable.fromWeb(response.body as NodeWebReadableStream<Uint8Array>);
    return { statusCode: response.status, headers, body };
  };
}
