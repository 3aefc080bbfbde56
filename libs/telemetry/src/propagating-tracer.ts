import {
  INVALID_SPANID,
  INVALID_TRACEID,
  context as contextApi,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace';

/**
 * The tracer of a process whose spans go nowhere (no exporter configured): each span is only its
 * context, as the SDK's would be — a new span id, the parent's trace id and trace state, or a new
 * trace — so trace ids still reach the NATS headers, the upstream's `traceparent`, the call log
 * and the logs; nothing is recorded, since nothing would read it. The SDK's tracer records every
 * span (attributes, links, times) and then drops it at its end: the endpoint's and the proxy's
 * share of that is measured in BENCHMARKS.md ("Spans that go nowhere").
 *
 * The sampling is the SDK's default (parent-based, always on): a span is sampled unless its
 * parent was not, so the `traceparent` flags a process sends are the same either way.
 */
export class PropagatingTracerProvider implements TracerProvider {
  private readonly tracer = new PropagatingTracer();

  getTracer(): Tracer {
    return this.tracer;
  }
}

class PropagatingTracer implements Tracer {
  private readonly ids = new RandomIdGenerator();

  startSpan(_name: string, options?: SpanOptions, ctx: Context = contextApi.active()): Span {
    const parent = options?.root === true ? undefined : trace.getSpanContext(ctx);
    const valid = parent !== undefined && isValid(parent);
    const spanContext: SpanContext = valid
      ? {
          traceId: parent.traceId,
          spanId: this.ids.generateSpanId(),
          traceFlags: parent.traceFlags & TraceFlags.SAMPLED,
          ...(parent.traceState === undefined ? {} : { traceState: parent.traceState }),
        }
      : { traceId: this.ids.generateTraceId(), spanId: this.ids.generateSpanId(), traceFlags: TraceFlags.SAMPLED };
    return trace.wrapSpanContext(spanContext);
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    options: SpanOptions,
    ctx: Context,
    fn: F,
  ): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    a?: SpanOptions | F,
    b?: Context | F,
    c?: F,
  ): ReturnType<F> {
    const fn = (c ?? (typeof b === 'function' ? b : a)) as F;
    const options = typeof a === 'function' ? undefined : a;
    const ctx = typeof b === 'function' || b === undefined ? contextApi.active() : b;
    const span = this.startSpan(name, options, ctx);
    return contextApi.with(trace.setSpan(ctx, span), fn as (s: Span) => ReturnType<F>, undefined, span);
  }
}

/**
 * Whether a parent's context is a real one: not the API's invalid context, ids of their length.
 * Every context a process holds has hex ids already (its own spans' are generated; a remote one
 * passed the W3C propagator's parse), so the API's hex scan of both ids on every span is spared.
 */
function isValid(sc: SpanContext): boolean {
  return (
    sc.traceId.length === 32 &&
    sc.spanId.length === 16 &&
    sc.traceId !== INVALID_TRACEID &&
    sc.spanId !== INVALID_SPANID
  );
}
