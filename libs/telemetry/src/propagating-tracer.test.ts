import { headers } from '@nats-io/transport-node';
import { INVALID_SPAN_CONTEXT, ROOT_CONTEXT, TraceFlags, context, trace, type SpanContext } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { PropagatingTracerProvider } from './propagating-tracer.js';
import { setupTelemetry, type Telemetry } from './setup.js';
import { ensureTraceContext } from './trace-context.js';
import { extractTraceContext, injectTraceHeaders } from './nats-propagation.js';

const remote = (traceFlags: number, traceState?: SpanContext['traceState']): SpanContext => ({
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags,
  isRemote: true,
  ...(traceState === undefined ? {} : { traceState }),
});

describe('spans of a process with no exporter', () => {
  const tracer = new PropagatingTracerProvider().getTracer();

  it('continue the parent trace with a span id of their own, and its sampling', () => {
    const parent = remote(TraceFlags.SAMPLED);
    const span = tracer.startSpan('child', {}, trace.setSpanContext(ROOT_CONTEXT, parent));
    const sc = span.spanContext();
    expect(sc.traceId).toBe(parent.traceId);
    expect(sc.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(sc.spanId).not.toBe(parent.spanId);
    expect(sc.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(span.isRecording()).toBe(false);
    // A parent that was not sampled: neither is its child (the SDK's default, parent-based, sampler).
    const unsampled = tracer.startSpan('child', {}, trace.setSpanContext(ROOT_CONTEXT, remote(TraceFlags.NONE)));
    expect(unsampled.spanContext().traceFlags).toBe(TraceFlags.NONE);
  });

  it('start a sampled trace of their own without a parent, or when asked for a root', () => {
    const a = tracer.startSpan('a', {}, ROOT_CONTEXT).spanContext();
    const b = tracer
      .startSpan('b', { root: true }, trace.setSpanContext(ROOT_CONTEXT, remote(TraceFlags.SAMPLED)))
      .spanContext();
    for (const sc of [a, b]) {
      expect(trace.isSpanContextValid(sc)).toBe(true);
      expect(sc.traceFlags).toBe(TraceFlags.SAMPLED);
    }
    expect(a.traceId).not.toBe(b.traceId);
    // Under the API's invalid context (a non-recording parent of nothing): a trace of its own.
    const c = tracer.startSpan('c', {}, trace.setSpanContext(ROOT_CONTEXT, INVALID_SPAN_CONTEXT)).spanContext();
    expect(trace.isSpanContextValid(c)).toBe(true);
    expect(c.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(b.traceId).not.toBe(remote(TraceFlags.SAMPLED).traceId);
  });

  it('run a function in an active span, as the API overloads take it', () => {
    ensureTraceContext();
    const parent = trace.setSpanContext(ROOT_CONTEXT, remote(TraceFlags.SAMPLED));
    const seen = tracer.startActiveSpan('x', {}, parent, (span) => [
      span.spanContext().traceId,
      trace.getSpan(context.active()) === span,
    ]);
    expect(seen).toEqual([remote(TraceFlags.SAMPLED).traceId, true]);
    expect(tracer.startActiveSpan('y', (span) => trace.isSpanContextValid(span.spanContext()))).toBe(true);
  });
});

describe('setupTelemetry', () => {
  let t: Telemetry | undefined;
  afterEach(async () => {
    await t?.shutdown();
    t = undefined;
  });

  it('records nothing without an exporter, and still sends the trace on', async () => {
    t = await setupTelemetry({ serviceName: 'no-exporter' });
    const span = t.tracer.startSpan('call', { attributes: { a: 1 } }, ROOT_CONTEXT);
    expect(span.isRecording()).toBe(false);
    const h = headers();
    injectTraceHeaders(h, trace.setSpan(ROOT_CONTEXT, span));
    expect(h.get('traceparent')).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
    expect(trace.getSpanContext(extractTraceContext(h))?.traceId).toBe(span.spanContext().traceId);
    span.end();
  });

  it('records every span when an exporter is configured', async () => {
    const exporter = new InMemorySpanExporter();
    t = await setupTelemetry({ serviceName: 'exporter', spanExporter: exporter });
    const span = t.tracer.startSpan('call', { attributes: { a: 1 } }, ROOT_CONTEXT);
    expect(span.isRecording()).toBe(true);
    span.end();
    expect(exporter.getFinishedSpans().map((s) => [s.name, s.attributes.a])).toEqual([['call', 1]]);
  });
});
