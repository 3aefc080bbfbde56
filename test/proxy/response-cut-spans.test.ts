import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';

import type { ProxyClient } from '@mcpx/proxy-client';
import type { Telemetry, TraceContextKind } from '@mcpx/telemetry';
import { hostileContentTools } from '../servers/content-tools.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { createAgentListing } from '../support/fixtures/agents.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';
import { tracedCall } from '../support/fixtures/traced-call.js';

/** The default bound on one answer's body and on one event of an event stream: 8 MiB. */
const BOUND_BYTES = 8 * 1024 * 1024;

/**
 * A call whose answer the outbound bounds cut (a 9 MiB blob, 12 MiB as base64, over the 8 MiB
 * bound of one body or one event) fails naming the bound, and its upstream span (`mcp tools/call`)
 * carries one `outbound.response_cut` event naming the bound and its limit: with the proxy's own
 * trace context (`explicit`: the cut is heard where no span is active) and the one of a process
 * shared with others. A modern and a legacy server.
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  'a cut answer is an event on the call span (%s trace context)',
  (kind) => {
    const exporter = new InMemorySpanExporter();
    let traced: TracedSystem;
    let telemetry: Telemetry;
    let proxy: ProxyClient;
    let api: ApiClient;
    let agent: string;
    const upstreams: TestMcpServer[] = [];

    beforeAll(async () => {
      traced = await startTracedSystem(kind, 'mcpx-response-cut-test', exporter);
      ({ telemetry, proxy, api } = traced);
      for (const era of ['modern', 'legacy'] as const) {
        const upstream = await startTestMcpServer({ era, tools: hostileContentTools() });
        upstreams.push(upstream);
        await api.act('SetMcpServer', { name: era, config: { url: upstream.url } });
      }
      agent = await createAgentListing(api, 'cut', ['modern', 'legacy'], ['legacy__blob', 'modern__blob']);
    }, 120_000);

    afterAll(async () => {
      await traced?.stop();
      await Promise.all(upstreams.map((u) => u.close()));
    });

    it.each(['modern', 'legacy'])('a %s server', async (era) => {
      const { spans, error } = await tracedCall(telemetry, exporter, proxy, {
        account: api.principal,
        agent,
        run: `cut-${era}-${kind}`,
        tool: `${era}__blob`,
        arguments: { mib: 9 },
      });
      expect(error?.message).toMatch(/too large: .*\(bound max(BodyBytes|SseEventBytes) = 8388608/);
      const upstreamCall = spans.filter((s) => s.name === 'mcp tools/call');
      expect(upstreamCall).toHaveLength(1);
      const cuts = spans.flatMap((s) => s.events.filter((e) => e.name === 'outbound.response_cut'));
      expect(cuts).toHaveLength(1);
      expect(upstreamCall[0]!.events.filter((e) => e.name === 'outbound.response_cut')).toEqual([
        expect.objectContaining({
          attributes: {
            'mcpx.bound': expect.stringMatching(/^max(BodyBytes|SseEventBytes)$/),
            'mcpx.bound.limit': BOUND_BYTES,
          },
        }),
      ]);
    });
  },
);
