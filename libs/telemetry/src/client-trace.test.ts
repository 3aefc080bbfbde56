import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTraceOrigin, setupTelemetry, traceCarrier, withSpan, type Telemetry } from './index.js';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

describe("a client's trace context on a public face", () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'public-face', spanExporter: exporter });
  });

  afterAll(async () => {
    await telemetry?.shutdown();
  });

  it('starts a new trace linked to the client’s, and what the span passes on carries the new trace', async () => {
    const origin = clientTraceOrigin({ traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=x' });
    expect(origin.parent).toBe(ROOT_CONTEXT);
    const passedOn = await withSpan(telemetry.tracer, 'face', {}, async () => traceCarrier(), origin);
    const span = exporter.getFinishedSpans().find((s) => s.name === 'face')!;
    expect(span.spanContext().traceId).not.toBe(CLIENT_TRACE);
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.links).toHaveLength(1);
    expect(span.links[0]!.context).toMatchObject({ traceId: CLIENT_TRACE, spanId: CLIENT_SPAN });
    expect(span.links[0]!.attributes).toEqual({ 'mcpx.link': 'client' });
    expect(passedOn.traceparent).toContain(span.spanContext().traceId);
    expect(passedOn.traceparent).not.toContain(CLIENT_TRACE);
  });

  it('takes the first carrier with a traceparent, and ignores what is not a valid one', () => {
    const meta = { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` };
    const headers = { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` };
    expect(clientTraceOrigin(meta, headers).links[0]!.context.traceId).toBe(CLIENT_TRACE);
    expect(clientTraceOrigin(undefined, headers).links[0]!.context.traceId).toBe('1'.repeat(32));
    for (const bad of [
      {},
      { traceparent: 'nonsense' },
      { traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01` },
      { traceparent: [`00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`] },
      { traceparent: 7 },
    ]) {
      expect(clientTraceOrigin(bad)).toEqual({ parent: ROOT_CONTEXT, links: [] });
    }
  });

  it('never joins whatever trace is active where the request is handled', async () => {
    const active = telemetry.tracer.startSpan('ambient');
    await context.with(trace.setSpan(ROOT_CONTEXT, active), () =>
      withSpan(telemetry.tracer, 'face-2', {}, async () => undefined, clientTraceOrigin(undefined)),
    );
    active.end();
    const span = exporter.getFinishedSpans().find((s) => s.name === 'face-2')!;
    expect(span.spanContext().traceId).not.toBe(active.spanContext().traceId);
    expect(span.links).toEqual([]);
  });
});
