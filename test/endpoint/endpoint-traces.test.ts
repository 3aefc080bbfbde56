import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { installTraceContext, setupTelemetry, type Telemetry, type TraceContextKind } from '@mcpx/telemetry';
import { APP_URI, startAppsUpstream } from '../servers/apps-upstream.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { legacyCall } from './raw-mcp.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const HEADER_TRACE = '5ce03a4688c45eb7b4df03ae1f1f5847';

/**
 * Observability of the endpoint's call path: a call starts a new trace linked to the client's trace
 * context (never its child), which continues through the proxy to the remote server, the endpoint counts requests by method and
 * outcome (refusals included), and no token reaches a span, a log line or a metric. Run with both
 * trace contexts: `explicit` is the endpoint's and the proxy's own in production (their processes'
 * context does not follow awaits), `async` is what they meet in a process shared with the others.
 */
// The lean path reaches the proxy without an await when it can; the SDK's handler awaits first.
const RUNS: Array<[TraceContextKind, 'on' | 'off']> = [
  ['explicit', 'on'],
  ['explicit', 'off'],
  ['async', 'on'],
];

describe.each(RUNS)(
  'the agent MCP endpoint (%s trace context, lean calls %s): traces, metrics, no token anywhere',
  (kind, lean) => {
    const exporter = new InMemorySpanExporter();
    const logs: string[] = [];
    let telemetry: Telemetry;
    let sys: EndpointSystem;
    let upstream: TestMcpServer;
    let token: string;

    beforeAll(async () => {
      installTraceContext(kind);
      telemetry = await setupTelemetry({ serviceName: 'endpoint-test', spanExporter: exporter });
      [sys, upstream] = await Promise.all([
        startEndpointSystem({
          telemetry,
          servicesTelemetry: telemetry,
          logSink: (l) => logs.push(l),
          endpointEnv: { LOG_LEVEL: 'debug', ENDPOINT_LEAN_CALLS: lean },
        }),
        startTestMcpServer({ era: 'modern' }),
      ]);
      await sys.system.setServer('demo', upstream.url);
      await sys.system.createAgent('traced', ['demo'], 1);
      ({ token } = await sys.token('traced'));
    }, 120_000);

    afterAll(async () => {
      await sys?.stop();
      await upstream?.close();
      await telemetry?.shutdown();
      installTraceContext('async');
    });

    it("starts a new trace linked to the client's, so no client joins the upstream's trace, and counts the call", async () => {
      const client = new Client({ name: 'traced', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(sys.urlOf('traced')), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      try {
        const out = await client.callTool({
          name: 'demo__echo',
          arguments: { text: 'traced' },
          _meta: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` },
        });
        expect(out.isError).toBeFalsy();
      } finally {
        await client.close();
      }
      // A 2025-11-25 client sends it as the HTTP header.
      const legacy = await legacyCall(sys.urlOf('traced'), token, 'demo__echo', { text: 'header' }, 7, {
        traceparent: `00-${HEADER_TRACE}-00f067aa0ba902b7-01`,
      });
      expect(legacy.result?.isError).toBeFalsy();
      const seen = (): string[] => [
        ...upstream.stats.traceparents,
        ...(upstream.stats.metaSeen.get('tools/call') ?? []).map((m) =>
          typeof m.traceparent === 'string' ? m.traceparent : '',
        ),
      ];
      for (const clientTrace of [TRACE, HEADER_TRACE]) {
        const span = await eventually(
          async () =>
            exporter
              .getFinishedSpans()
              .find((s) => s.name === 'endpoint.tools/call' && s.links.some((l) => l.context.traceId === clientTrace)),
          10_000,
          'the endpoint span',
        );
        // A root of its own, linked to the client's context…
        expect(span.spanContext().traceId).not.toBe(clientTrace);
        expect(span.parentSpanContext).toBeUndefined();
        expect(span.links).toEqual([
          expect.objectContaining({
            context: expect.objectContaining({ traceId: clientTrace, spanId: '00f067aa0ba902b7' }),
            attributes: { 'mcpx.link': 'client' },
          }),
        ]);
        expect(span.attributes).toMatchObject({ 'mcpx.tool': 'demo__echo', 'mcpx.outcome': 'ok' });
        // …the proxy's call span its child, and the upstream request's span the proxy's…
        const traceId = span.spanContext().traceId;
        const proxyCall = await eventually(
          async () =>
            exporter.getFinishedSpans().find((s) => s.name === 'proxy.call' && s.spanContext().traceId === traceId),
          10_000,
          'the proxy span',
        );
        expect(proxyCall.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
        const upstreamCall = exporter
          .getFinishedSpans()
          .find((s) => s.name === 'mcp tools/call' && s.spanContext().traceId === traceId);
        expect(upstreamCall?.parentSpanContext?.spanId).toBe(proxyCall.spanContext().spanId);
        // …whose context the remote server received (in _meta and the header), not the client's.
        const upstreamId = upstreamCall!.spanContext().spanId;
        const sent = `${traceId}-${upstreamId}`;
        expect(upstream.stats.traceparents.some((tp) => tp.includes(sent))).toBe(true);
        expect(seen().filter((tp) => tp.includes(sent))).toHaveLength(2);
      }
      expect(seen().some((tp) => tp.includes(TRACE) || tp.includes(HEADER_TRACE))).toBe(false);

      // A refused request is counted too.
      expect(
        (
          await fetch(sys.urlOf('traced'), {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{}',
          })
        ).status,
      ).toBe(401);
      const metrics = await eventually(
        async () => {
          const text = await (await fetch(`${sys.endpoint.internalUrl}/metrics`)).text();
          return text.includes('outcome="token_missing"') ? text : undefined;
        },
        10_000,
        'the endpoint metrics',
      );
      expect(metrics).toMatch(/mcpx_endpoint_requests_total\{[^}]*method="tools\/call"[^}]*outcome="ok"[^}]*\} [1-9]/);
      expect(metrics).toContain('mcpx_endpoint_call_duration_ms');

      const everything =
        JSON.stringify(exporter.getFinishedSpans().map((s) => ({ a: s.attributes, e: s.events, n: s.name }))) +
        logs.join('\n') +
        metrics;
      expect(everything).not.toContain(token);
      expect(everything).not.toContain(token.slice('mcpx_at_'.length));
    });

    it('a relayed request (resources/read) runs in one trace from the endpoint through the proxy to the server', async () => {
      const apps = await startAppsUpstream();
      try {
        await sys.system.setServer('apps', apps.url);
        await sys.system.createAgent('reader', ['apps'], 3);
        const { token: readerToken } = await sys.token('reader');
        const client = new Client({ name: 'reader', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${sys.endpoint.url}/v1/agents/reader/servers/apps/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${readerToken}` } },
          }),
        );
        try {
          const read = await client.readResource({ uri: APP_URI });
          expect(read.contents).toHaveLength(1);
        } finally {
          await client.close();
        }
        const span = await eventually(
          async () => exporter.getFinishedSpans().find((s) => s.name === 'endpoint.resources/read'),
          10_000,
          'the endpoint span',
        );
        const { traceId, spanId } = span.spanContext();
        const relay = exporter
          .getFinishedSpans()
          .find((s) => s.name === 'proxy.relay' && s.spanContext().traceId === traceId);
        expect(relay?.parentSpanContext?.spanId).toBe(spanId);
        // The server's request carried the relay span's context in its `_meta`.
        expect(apps.readMeta.map((m) => m.traceparent)).toContain(`00-${traceId}-${relay!.spanContext().spanId}-01`);
      } finally {
        await apps.close();
      }
    });
  },
);
