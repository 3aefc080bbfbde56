import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import type { ProxyClient } from '@mcpx/proxy-client';
import type { Telemetry } from '@mcpx/telemetry';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import type { ApiClient } from '../support/api-client.js';
import { createAgentListing } from '../support/fixtures/agents.js';
import { tracedCall } from '../support/fixtures/traced-call.js';
import { eventually } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';
import { metricsText, metricValue } from '../support/metrics-text.js';

/** The default bound on one answer's body: 8 MiB. */
const BOUND_BYTES = 8 * 1024 * 1024;

/**
 * Quiet discovery (the tool listing of each connection's opening, reported to the registry) is a
 * path of discovery traffic: each listing is a `proxy.tools.observe` span in the trace of the call
 * that opened the connection, whose context the listing carries to the server, and a count by
 * outcome. A listing cut by a bound says so on its span, as a call's answer does.
 */
describe('quiet discovery is traced and counted', () => {
  const exporter = new InMemorySpanExporter();
  let traced: TracedSystem;
  let telemetry: Telemetry;
  let proxy: ProxyClient;
  let api: ApiClient;
  let upstream: TestMcpServer;
  let front: FrontServer;
  /** In front of the plain server, forwarding all: what the proxy sent, `_meta` included. */
  let seen: FrontServer;
  let agent: string;
  let oversize = false;

  beforeAll(async () => {
    traced = await startTracedSystem('explicit', 'mcpx-quiet-discovery-test', exporter);
    ({ telemetry, proxy, api } = traced);
    upstream = await startTestMcpServer({ era: 'modern', tools: [echoTool()] });
    front = await startFrontServer({
      mode: 'oversize',
      target: upstream.url,
      method: 'tools/list',
      bytes: BOUND_BYTES + 1024 * 1024,
      armed: () => oversize,
    });
    seen = await startFrontServer({ mode: 'forward', target: upstream.url });
    await api.act('SetMcpServer', { name: 'plain', config: { url: `${seen.origin}/mcp` } });
    await api.act('SetMcpServer', { name: 'grows', config: { url: `${front.origin}/mcp` } });
    agent = await createAgentListing(api, 'observer', ['plain', 'grows'], ['plain__echo', 'grows__echo']);
  }, 120_000);

  afterAll(async () => {
    await traced?.stop();
    await front?.close();
    await seen?.close();
    await upstream?.close();
  });

  const observeSpan = (traceId: string): Promise<ReadableSpan> =>
    eventually(
      async () =>
        exporter
          .getFinishedSpans()
          .find((s) => s.name === 'proxy.tools.observe' && s.spanContext().traceId === traceId),
      10_000,
      'the proxy.tools.observe span',
    );

  /** The services here share this test's telemetry: its Prometheus text is theirs. */
  const metric = async (outcome: string): Promise<number> =>
    metricValue(await metricsText(telemetry), 'mcpx_proxy_tools_observed_total', { outcome });

  it("opens a connection's listing as a child of the call's trace, carried to the server, and counts it published", async () => {
    const before = await metric('published');
    const { call, error } = await tracedCall(telemetry, exporter, proxy, {
      account: api.principal,
      agent,
      run: 'observe-plain',
      tool: 'plain__echo',
      arguments: { text: 'hi' },
    });
    expect(error).toBeUndefined();
    const span = await observeSpan(call.spanContext().traceId);
    expect(span.attributes).toMatchObject({
      'mcpx.server': 'plain',
      'mcpx.outcome': 'published',
      'mcpx.tools.count': 1,
    });
    // The listing carried the observe span's context to the server (a modern request: in its `_meta`).
    const carried = (seen.bodies as Array<{ method?: string; params?: { _meta?: { traceparent?: string } } }>)
      .filter((b) => b.method === 'tools/list')
      .map((b) => b.params?._meta?.traceparent?.split('-')[2]);
    expect(carried).toContain(span.spanContext().spanId);
    expect(await metric('published')).toBeGreaterThan(before);
  });

  it('marks a listing cut by the body bound on its span, fails it, and still answers the call', async () => {
    oversize = true;
    const before = await metric('failed');
    const { call, error } = await tracedCall(telemetry, exporter, proxy, {
      account: api.principal,
      agent,
      run: 'observe-grows',
      tool: 'grows__echo',
      arguments: { text: 'hi' },
    });
    expect(error).toBeUndefined();
    const span = await observeSpan(call.spanContext().traceId);
    expect(span.attributes).toMatchObject({ 'mcpx.server': 'grows' });
    expect(span.status.code).toBe(2);
    expect(span.attributes['mcpx.outcome']).not.toBe('published');
    expect(span.events.filter((e) => e.name === 'outbound.response_cut')).toEqual([
      expect.objectContaining({ attributes: { 'mcpx.bound': 'maxBodyBytes', 'mcpx.bound.limit': BOUND_BYTES } }),
    ]);
    await eventually(async () => ((await metric('failed')) > before ? true : undefined), 5_000, 'the failed count');
  });
});
