import { ROOT_CONTEXT, propagation, trace } from '@opentelemetry/api';
import type { Context, Link } from '@opentelemetry/api';

/** What a client may send as its trace context: HTTP headers, or a request's `_meta`. */
export type ClientTraceCarrier = Record<string, unknown> | undefined;

/** A string header or `_meta` value; a repeated header (an array) is not a trace context. */
function stringOf(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/**
 * Where the span of a request on a public face (the endpoint's calls, the registry's actions and
 * OAuth pages) starts: a new trace, never the client's. A client's `traceparent` made parent would
 * let anyone outside join the connector's traces (and the upstream servers' that receive them, and
 * choose the trace ids and sampling flag they carry); instead the new root span carries a link to
 * the client's context, so the two traces can still be read side by side. Internal hops (NATS
 * between the connector's own services) stay parent and child. The first carrier with a
 * `traceparent` is the client's (e.g. `_meta`, then the HTTP headers).
 */
export function clientTraceOrigin(...carriers: ClientTraceCarrier[]): { parent: Context; links: Link[] } {
  const from = carriers.find((c) => stringOf(c?.traceparent) !== undefined);
  if (from === undefined) return { parent: ROOT_CONTEXT, links: [] };
  const carrier: Record<string, string> = { traceparent: stringOf(from.traceparent)! };
  const state = stringOf(from.tracestate);
  if (state !== undefined) carrier.tracestate = state;
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier));
  if (linked === undefined || !trace.isSpanContextValid(linked)) return { parent: ROOT_CONTEXT, links: [] };
  return { parent: ROOT_CONTEXT, links: [{ context: linked, attributes: { 'mcpx.link': 'client' } }] };
}
