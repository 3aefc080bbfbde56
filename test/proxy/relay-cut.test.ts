import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import type { ProxyClient } from '@mcpx/proxy-client';
import type { Telemetry, TraceContextKind } from '@mcpx/telemetry';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { createAgentListing } from '../support/fixtures/agents.js';
import { eventually } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';

/** The default bound on one event of an event stream: 8 MiB. */
const BOUND_BYTES = 8 * 1024 * 1024;

/** One prompt whose description alone (9 MiB) is over the bound of one event. */
const HUGE_PROMPTS = [{ name: 'huge', description: 'x'.repeat(9 * 1024 * 1024) }];

/**
 * A relayed listing (`prompts/list`) whose answer the outbound bounds cut fails as a cut call
 * does: `maybe_executed` naming the bound (not a generic "connection closed", nor the server's
 * error for the stand-in answer that ends a cut stream), and its `proxy.relay` span carries one
 * `outbound.response_cut` event naming the bound and its limit. On a legacy Streamable HTTP
 * session (the POST's stream is cut and ended by a stand-in answer) and a legacy SSE one (the
 * session's stream is cut); with the proxy's own trace context and the one of a process shared
 * with others.
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  'a relayed listing whose answer was cut (%s trace context)',
  (kind) => {
    const exporter = new InMemorySpanExporter();
    let traced: TracedSystem;
    let telemetry: Telemetry;
    let proxy: ProxyClient;
    let api: ApiClient;
    let agent: string;
    const upstreams: TestMcpServer[] = [];

    beforeAll(async () => {
      traced = await startTracedSystem(kind, 'mcpx-relay-cut-test', exporter);
      ({ telemetry, proxy, api } = traced);
      for (const transport of ['http', 'sse'] as const) {
        const upstream = await startTestMcpServer({
          era: 'legacy',
          transport,
          tools: [echoTool()],
          prompts: HUGE_PROMPTS,
        });
        upstreams.push(upstream);
        await api.act('SetMcpServer', { name: `l${transport}`, config: { url: upstream.url, transport } });
      }
      agent = await createAgentListing(api, 'relay-cut', ['lhttp', 'lsse'], ['lhttp__echo', 'lsse__echo']);
    }, 120_000);

    afterAll(async () => {
      await traced?.stop();
      await Promise.all(upstreams.map((u) => u.close()));
    });

    it.each(['http', 'sse'])('on a legacy %s session', async (transport) => {
      const root = telemetry.tracer.startSpan('agent.turn');
      const error = await proxy
        .relay(
          {
            account: api.principal,
            agent,
            run: `relay-cut-${transport}-${kind}`,
            server: `l${transport}`,
            method: 'prompts/list',
            params: {},
          },
          { trace: trace.setSpan(ROOT_CONTEXT, root) },
        )
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      root.end();
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).code).toBe('maybe_executed');
      expect((error as WireError).message).toMatch(/too large: .*\(bound maxSseEventBytes = 8388608/);

      const traceId = root.spanContext().traceId;
      const relay = await eventually(
        async () =>
          exporter.getFinishedSpans().find((s) => s.name === 'proxy.relay' && s.spanContext().traceId === traceId),
        10_000,
        'the proxy.relay span',
      );
      expect(relay.attributes['mcpx.outcome']).toBe('maybe_executed');
      expect(cutEvents(relay)).toEqual([
        expect.objectContaining({ attributes: { 'mcpx.bound': 'maxSseEventBytes', 'mcpx.bound.limit': BOUND_BYTES } }),
      ]);
      const inTrace = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      expect(inTrace.flatMap(cutEvents)).toHaveLength(1);
    });
  },
);

function cutEvents(span: ReadableSpan): ReadableSpan['events'] {
  return span.events.filter((e) => e.name === 'outbound.response_cut');
}
