import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { legacyCall } from './raw-mcp.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const HEADER_TRACE = '5ce03a4688c45eb7b4df03ae1f1f5847';

/**
 * Observability of the endpoint's call path: a call starts a new trace linked to the client's trace
 * context (never its child), which continues through the proxy to the remote server, the endpoint counts requests by method and
 * outcome (refusals included), and no token reaches a span, a log line or a metric.
 */
describe('the agent MCP endpoint: traces, metrics, no token anywhere', () => {
  const exporter = new InMemorySpanExporter();
  const logs: string[] = [];
  let telemetry: Telemetry;
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'endpoint-test', spanExporter: exporter });
    [sys, upstream] = await Promise.all([
      startEndpointSystem({ telemetry, logSink: (l) => logs.push(l), endpointEnv: { LOG_LEVEL: 'debug' } }),
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
      // …which the remote server received (through the proxy, in _meta or the header), not the client's.
      expect(seen().some((tp) => tp.includes(span.spanContext().traceId))).toBe(true);
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
});
