import { context, propagation } from '@opentelemetry/api';

/** A lower-level request function beside a fetch (e.g. `@mcpx/outbound`'s `request`): its headers are a plain record. */
export type HeaderRecordRequest<O extends { headers: Record<string, string> }, R> = (url: URL, opts: O) => Promise<R>;

/**
 * Wraps a request function so every request carries the active trace context (`traceparent`),
 * like {@link tracingFetch} does for fetch.
 */
export function tracingRequest<O extends { headers: Record<string, string> }, R>(
  base: HeaderRecordRequest<O, R>,
): HeaderRecordRequest<O, R> {
  return (url, opts) => {
    // One copy of the headers, the context written into it (the caller's object is left alone).
    const headers = { ...opts.headers };
    propagation.inject(context.active(), headers);
    return base(url, { ...opts, headers });
  };
}

/**
 * Wraps a fetch so every request carries the active trace context (`traceparent`), so one trace
 * runs from an action or a call through the services to the remote MCP server. The result is a
 * fetch only: a lower-level request function is wrapped on its own ({@link tracingRequest}).
 */
export function tracingFetch(base: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    if (Object.keys(carrier).length === 0) return base(input, init);
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(carrier)) headers.set(k, v);
    return base(input, { ...init, headers });
  };
}
