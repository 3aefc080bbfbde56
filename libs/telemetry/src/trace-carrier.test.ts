import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { responseCutRecorder, setupTelemetry, traceCarrier, type Telemetry } from './index.js';

describe('traceCarrier and responseCutRecorder', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'carrier-test', spanExporter: exporter });
  });
  afterAll(async () => {
    await telemetry?.shutdown();
  });

  it('carries the active span as traceparent, and nothing with no span', () => {
    expect(traceCarrier()).toEqual({});
    const span = telemetry.tracer.startSpan('outer');
    const carrier = context.with(trace.setSpan(context.active(), span), () => traceCarrier());
    span.end();
    const { traceId, spanId } = span.spanContext();
    expect(carrier.traceparent).toBe(`00-${traceId}-${spanId}-01`);
  });

  it('counts a cut by bound and marks the active span; a malformed report never throws', () => {
    const record = responseCutRecorder(new MeterProvider().getMeter('t'));
    const span = telemetry.tracer.startSpan('call');
    context.with(trace.setSpan(context.active(), span), () => {
      record({ details: { bound: { name: 'maxBodyBytes', limit: 8 } } });
      expect(() => record({} as never)).not.toThrow();
    });
    span.end();
    const done = exporter.getFinishedSpans().find((s) => s.spanContext().spanId === span.spanContext().spanId);
    expect(done?.events.map((e) => [e.name, e.attributes?.['mcpx.bound']])).toEqual([
      ['outbound.response_cut', 'maxBodyBytes'],
    ]);
  });
});
