import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ProxyClient } from '@mcpx/proxy-client';
import type { Telemetry, TraceContextKind } from '@mcpx/telemetry';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { eventually } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';
import { tracedCall } from '../support/fixtures/traced-call.js';

/**
 * The requests the MCP SDK sends on a legacy (2025-11-25) connection after its handshake carry
 * the trace context of the span that asked, in their `traceparent` header: a call on the legacy
 * SSE transport (the upstream span's), quiet discovery's `tools/list` on a new connection (the
 * acquire span's, under which it opened) and a relayed `prompts/list` (the relay span's). With
 * the proxy's own trace context (`explicit`: it does not follow awaits, so nothing but the
 * context passed by hand can reach those headers) and the one of a process shared with others.
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  "a legacy connection's requests carry their caller's trace context (%s trace context)",
  (kind) => {
    const exporter = new InMemorySpanExporter();
    let traced: TracedSystem;
    let telemetry: Telemetry;
    let proxy: ProxyClient;
    let http: TestMcpServer;
    let sse: TestMcpServer;
    let api: ApiClient;
    let agent: string;

    beforeAll(async () => {
      [traced, http, sse] = await Promise.all([
        startTracedSystem(kind, 'mcpx-legacy-trace-test', exporter),
        startTestMcpServer({ era: 'legacy', tools: [echoTool()], prompts: true }),
        startTestMcpServer({ era: 'legacy', transport: 'sse', tools: [echoTool()] }),
      ]);
      ({ telemetry, proxy, api } = traced);
      await api.act('SetMcpServer', { name: 'lh', config: { url: http.url } });
      await api.act('SetMcpServer', { name: 'ls', config: { url: sse.url, transport: 'sse' } });
      ({
        agent: { id: agent },
      } = await api.act<{ agent: { id: string } }>('CreateAgent', {
        name: 'legacy-trace',
        definition: { mcpServers: ['lh', 'ls'] },
      }));
      await eventually(
        async () =>
          (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length === 2 ? true : undefined,
        15_000,
        'tools projected',
      );
    }, 120_000);

    afterAll(async () => {
      await traced?.stop();
      await Promise.all([http?.close(), sse?.close()]);
    });

    const one = (spans: ReadableSpan[], name: string): ReadableSpan => {
      const found = spans.filter((s) => s.name === name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };
    const traceparent = (span: ReadableSpan): string =>
      `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
    const sentBy = (server: TestMcpServer, method: string): string[] =>
      server.stats.traceparentsByMethod.get(method) ?? [];

    it("a call on the SSE transport sends its upstream span's context; the new connection's listing its own span's, a child of the acquire span", async () => {
      const { spans, error } = await tracedCall(telemetry, exporter, proxy, {
        account: api.principal,
        agent,
        run: `sse-${kind}`,
        tool: 'ls__echo',
        arguments: { text: 'traced' },
      });
      expect(error).toBeUndefined();
      const upstreamCall = one(spans, 'mcp tools/call');
      expect(sentBy(sse, 'tools/call')).toContain(traceparent(upstreamCall));
      // Quiet discovery lists the tools of the connection the call opened, after the handshake,
      // under a span of its own (proxy.tools.observe), a child of the acquire span.
      const acquire = one(spans, 'proxy.pool.acquire');
      expect(acquire.attributes['mcpx.pool.handshake']).toBe(true);
      const observe = await eventually(
        async () =>
          exporter
            .getFinishedSpans()
            .find(
              (s) => s.name === 'proxy.tools.observe' && s.parentSpanContext?.spanId === acquire.spanContext().spanId,
            ),
        10_000,
        "the opening's listing span, a child of the acquire span",
      );
      expect(sentBy(sse, 'tools/list')).toContain(traceparent(observe));
    });

    it("a relayed prompts/list on a legacy Streamable HTTP session sends the relay span's context", async () => {
      const root = telemetry.tracer.startSpan('agent.turn');
      const result = await proxy.relay(
        {
          account: api.principal,
          agent,
          run: `relay-${kind}`,
          server: 'lh',
          method: 'prompts/list',
          params: {},
        },
        { trace: trace.setSpan(ROOT_CONTEXT, root) },
      );
      root.end();
      expect(result.prompts).toEqual([expect.objectContaining({ name: 'greet' })]);
      const traceId = root.spanContext().traceId;
      const relay = await eventually(
        async () =>
          exporter.getFinishedSpans().find((s) => s.name === 'proxy.relay' && s.spanContext().traceId === traceId),
        10_000,
        'the proxy.relay span',
      );
      expect(sentBy(http, 'prompts/list')).toContain(traceparent(relay));
    });
  },
);
