import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import type { Attributes, Context, Link, Span, Tracer } from '@opentelemetry/api';

export interface WithSpanOptions {
  kind?: SpanKind;
  /** Parent context, e.g. from `extractTraceContext(msg.headers)`; default: the active one. */
  parent?: Context;
  /** Links to other traces, e.g. the client's (`clientTraceOrigin`). */
  links?: Link[];
}

/**
 * Runs `fn` inside a new active span: a throw (or rejection) is recorded as an exception and
 * sets the status to ERROR before it propagates; the span always ends. Attributes must never
 * hold secrets (see `safeUrlForTelemetry`).
 */
export async function withSpan<T>(
  tracer: Tracer,
  name: string,
  attrs: Attributes,
  fn: (span: Span) => Promise<T>,
  opts: WithSpanOptions = {},
): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer.startSpan(
    name,
    {
      kind: opts.kind ?? SpanKind.INTERNAL,
      attributes: attrs,
      ...(opts.links !== undefined ? { links: opts.links } : {}),
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    throw err;
  } finally {
    span.end();
  }
}
