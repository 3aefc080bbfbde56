import { context, propagation } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';

/** A lower-level request function beside a fetch (e.g. `@mcpx/outbound`'s `request`): its headers are a plain record. */
export type HeaderRecordRequest<O extends { headers: Record<string, string> }, R> = (url: URL, opts: O) => Promise<R>;

/**
 * Wraps a request function so every request carries the active trace context (`traceparent`),
 * like {@link tracingFetch} does for fetch. A request that already carries a `traceparent` (its
 * caller passed its trace context explicitly) is sent as it is.
 */
export function tracingRequest<O extends { headers: Record<string, string> }, R>(
  base: HeaderRecordRequest<O, R>,
): HeaderRecordRequest<O, R> {
  return (url, opts) => {
    if (opts.headers.traceparent !== undefined) return base(url, opts);
    // One copy of the headers, the context written into it (the caller's object is left alone).
    const headers = { ...opts.headers };
    propagation.inject(context.active(), headers);
    return base(url, { ...opts, headers });
  };
}

/**
 * Wraps a fetch so every request carries a trace context (`traceparent`), so one trace runs from
 * an action or a call through the services to the remote MCP server: the one `explicit` gives when
 * it gives one (a process whose context does not follow awaits: ./trace-context.ts), else the
 * active one; a request that already carries a `traceparent` is sent as it is. The result is a fetch only: a lower-level request function is wrapped on its own
 * ({@link tracingRequest}).
 */
export function tracingFetch(base: typeof fetch = fetch, explicit?: () => Context | undefined): typeof fetch {
  return (input, init) => {
    const carrier: Record<string, string> = {};
    propagation.inject(explicit?.() ?? context.active(), carrier);
    if (Object.keys(carrier).length === 0) return base(input, init);
    const headers = new Headers(init?.headers);
    // Set by a wrapper of this fetch that was given its context explicitly.
    if (headers.has('traceparent')) return base(input, init);
    for (const [k, v] of Object.entries(carrier)) headers.set(k, v);
    return base(input, { ...init, headers });
  };
}
