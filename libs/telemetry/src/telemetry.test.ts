import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, headers } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  extractTraceContext,
  injectTraceHeaders,
  safeUrlForTelemetry,
  traceHeaders,
  setupTelemetry,
  withSpan,
} from './index.js';
import type { Telemetry } from './index.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

describe('trace context across NATS', () => {
  const exporterA = new InMemorySpanExporter();
  const exporterB = new InMemorySpanExporter();
  let serviceA: Telemetry;
  let serviceB: Telemetry;
  let nc: NatsConnection;

  beforeAll(async () => {
    serviceA = await setupTelemetry({ serviceName: 'service-a', spanExporter: exporterA });
    serviceB = await setupTelemetry({ serviceName: 'service-b', spanExporter: exporterB });
    nc = await connect({ servers: NATS_URL, timeout: 5_000 });
  });

  afterAll(async () => {
    await nc?.close();
    await serviceA?.shutdown();
    await serviceB?.shutdown();
  });

  it('continues the trace of a request in the responder', async () => {
    const subject = `telemetry.test.${process.pid}.${Date.now()}`;
    const sub = nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        void withSpan(
          serviceB.tracer,
          'handle',
          { 'messaging.destination.name': msg.subject },
          async (span) => {
            msg.respond(span.spanContext().traceId);
          },
          { kind: SpanKind.CONSUMER, parent: extractTraceContext(msg.headers) },
        );
      },
    });
    await nc.flush();

    let sentTraceId = '';
    let sentSpanId = '';
    const reply = await withSpan(
      serviceA.tracer,
      'call',
      {},
      async (span) => {
        sentTraceId = span.spanContext().traceId;
        sentSpanId = span.spanContext().spanId;
        const h = injectTraceHeaders(headers());
        expect(h.get('traceparent')).toContain(sentTraceId);
        return nc.request(subject, 'ping', { timeout: 5_000, headers: h });
      },
      { kind: SpanKind.PRODUCER },
    );
    sub.unsubscribe();

    expect(reply.string()).toBe(sentTraceId);
    const [sent] = exporterA.getFinishedSpans();
    const [handled] = exporterB.getFinishedSpans();
    expect(sent?.spanContext().traceId).toBe(sentTraceId);
    expect(handled?.spanContext().traceId).toBe(sentTraceId);
    expect(handled?.parentSpanContext?.spanId).toBe(sentSpanId);
    expect(handled?.parentSpanContext?.isRemote).toBe(true);
    expect(handled?.resource.attributes['service.name']).toBe('service-b');
  });

  it('starts a new trace for a message without headers, even inside an active span', async () => {
    await withSpan(serviceA.tracer, 'outer', {}, async (outer) => {
      const extracted = extractTraceContext(undefined);
      expect(trace.getSpanContext(extracted)).toBeUndefined();
      const inner = await withSpan(serviceB.tracer, 'inner', {}, async (s) => s.spanContext().traceId, {
        parent: extractTraceContext(headers()),
      });
      expect(inner).not.toBe(outer.spanContext().traceId);
    });
  });

  it('traceHeaders: the context of the span as headers inside a span, no headers outside one', async () => {
    expect(traceHeaders(ROOT_CONTEXT)).toBeUndefined();
    await withSpan(serviceA.tracer, 'traced', {}, async (span) => {
      const h = traceHeaders();
      expect(h?.get('traceparent')).toContain(span.spanContext().traceId);
      expect(trace.getSpanContext(extractTraceContext(h))?.spanId).toBe(span.spanContext().spanId);
    });
  });

  it('matches a canonicalised Traceparent header', () => {
    const h = headers();
    h.set('Traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(trace.getSpanContext(extractTraceContext(h))?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('withSpan records a failure, ends the span and rethrows', async () => {
    exporterA.reset();
    await expect(
      withSpan(serviceA.tracer, 'boom', { 'mcp.tool': 'x' }, async () => {
        throw new Error('upstream said no');
      }),
    ).rejects.toThrow('upstream said no');
    const [span] = exporterA.getFinishedSpans();
    expect(span?.name).toBe('boom');
    expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream said no' });
    expect(span?.events.map((e) => e.name)).toContain('exception');
    expect(span?.attributes['mcp.tool']).toBe('x');
  });

  it('withSpan makes its span the active one inside fn', async () => {
    await withSpan(serviceA.tracer, 'active', {}, async (span) => {
      await new Promise((r) => setTimeout(r, 1));
      expect(trace.getSpan(context.active())).toBe(span);
    });
  });
});

describe('metrics', () => {
  it('serves a counter on /metrics (ephemeral port)', async () => {
    const t = await setupTelemetry({ serviceName: 'metrics-test', metricsPort: 0, metricsHost: '127.0.0.1' });
    try {
      const counter = t.meter.createCounter('mcpx_test_calls', { description: 'calls in the test' });
      counter.add(3, { outcome: 'ok' });
      expect(t.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await fetch(t.metricsUrl!);
      expect(res.status).toBe(200);
      const body = await res.text();
      expect(body).toMatch(/mcpx_test_calls_total\{[^}]*outcome="ok"[^}]*\} 3/);
      expect((await fetch(t.metricsUrl!.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await t.shutdown();
    }
  });

  it('metricsHandler serves the same text from a service-owned server', async () => {
    const t = await setupTelemetry({ serviceName: 'metrics-handler-test' });
    expect(t.metricsUrl).toBeUndefined();
    const server = createServer((req, res) => t.metricsHandler(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      t.meter.createCounter('mcpx_handler_hits').add(1);
      const { port } = server.address() as AddressInfo;
      const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(body).toMatch(/mcpx_handler_hits_total\{[^}]*\} 1/);
    } finally {
      await new Promise((r) => server.close(r));
      await t.shutdown();
      await t.shutdown(); // idempotent
    }
  });

  it('reports a port that is taken', async () => {
    const first = await setupTelemetry({ serviceName: 'a', metricsPort: 0, metricsHost: '127.0.0.1' });
    try {
      const port = Number(new URL(first.metricsUrl!).port);
      await expect(setupTelemetry({ serviceName: 'b', metricsPort: port, metricsHost: '127.0.0.1' })).rejects.toThrow(
        /cannot serve \/metrics/,
      );
    } finally {
      await first.shutdown();
    }
  });
});

describe('safeUrlForTelemetry', () => {
  it('drops userinfo, query and fragment', () => {
    expect(safeUrlForTelemetry('https://user:pw@mcp.example.com/mcp?api_key=s3cret#frag')).toBe(
      'https://mcp.example.com/mcp',
    );
  });
  it('redacts credential-like path segments and keeps ordinary ones', () => {
    expect(safeUrlForTelemetry(new URL('https://actions.example.com/mcp/sk-ak-9f8e7d6c5b4a39281706/sse'))).toBe(
      'https://actions.example.com/mcp/:redacted/sse',
    );
    expect(safeUrlForTelemetry('http://127.0.0.1:3001/v1/mcp')).toBe('http://127.0.0.1:3001/v1/mcp');
  });
  it('never echoes an unparsable input', () => {
    expect(safeUrlForTelemetry('not a url with token abc')).toBe('[invalid url]');
  });
});
