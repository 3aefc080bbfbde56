import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpAttributes, setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { freePort } from '../servers/free-port.js';
import { ApiClient } from '../support/api-client.js';
import { InProcessSystem, eventually } from '../support/system.js';

const SECRET = 'sk-live-disc0very-spans-MUST-NOT-LEAK';

function tool(name: string): TestTool {
  return { name, description: `tool ${name}`, handler: () => ({ content: [{ type: 'text', text: name }] }) };
}

/** The sum of a metric's samples whose labels include every one of `labels` (NaN samples kept as NaN). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let found: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const braces = /\{([^}]*)\}/.exec(line)?.[1] ?? '';
    if (!Object.entries(labels).every(([k, v]) => braces.includes(`${k}="${v}"`))) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    found = (found ?? 0) + value;
  }
  return found;
}

/**
 * Issue 16, point 1, for discovery and the projector, with real traffic through the three services
 * in one process: the spans (in-memory exporter) of a connect, each page of tools/list, the change
 * stream's opening, break and re-opening, the projector's batch and publish; the metrics from the
 * real Prometheus exposition. No span attribute carries a secret.
 */
describe('discovery and projection telemetry', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let upstream: TestMcpServer;
  let api: ApiClient;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-test', spanExporter: exporter, metricsPort: 0 });
    system = await InProcessSystem.start({ telemetry });
    upstream = await startTestMcpServer({
      era: 'modern',
      tools: ['a', 'b', 'c', 'd', 'e'].map(tool),
      pageSize: 2,
      requireHeader: { name: 'Authorization', value: `Bearer ${SECRET}` },
    });
    api = new ApiClient(system.apiUrl);
  }, 60_000);

  afterAll(async () => {
    await upstream?.close();
    await system?.stop();
    await telemetry?.shutdown();
  });

  const finished = (): ReadableSpan[] => exporter.getFinishedSpans();
  const named = (name: string): ReadableSpan[] => finished().filter((s) => s.name === name);
  const metrics = async (): Promise<string> => {
    const res = await fetch(telemetry.metricsUrl ?? '');
    return await res.text();
  };
  const childrenOf = (parent: ReadableSpan, name: string): ReadableSpan[] =>
    named(name).filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

  it('a discovery: its connect (an era probe), every page of tools/list, outcome on each; the duration by outcome', async () => {
    const res = await api.act('SetMcpServer', {
      name: 'paged',
      config: { url: upstream.url, secretHeaders: { Authorization: `Bearer ${SECRET}` } },
    });
    expect(res.server.status.state).toBe('ok');
    expect(res.server.tools).toHaveLength(5);

    const discover = named('registry.discover').find((s) => s.attributes[McpAttributes.server] === 'paged');
    expect(discover).toBeDefined();
    expect(discover?.attributes[McpAttributes.outcome]).toBe('ok');
    expect(discover?.attributes[McpAttributes.errorCode]).toBeUndefined();

    const [connect] = childrenOf(discover!, 'discovery.connect');
    expect(connect?.attributes).toMatchObject({
      [McpAttributes.methodName]: 'server/discover',
      [McpAttributes.outcome]: 'ok',
      'mcpx.era': 'modern',
      'mcpx.era_probe': true,
      'mcpx.prior': false,
    });
    // The era probe's own request, under the connect.
    expect(childrenOf(connect!, 'server/discover').map((s) => s.attributes[McpAttributes.outcome])).toContain('ok');

    const [list] = childrenOf(discover!, 'discovery.list');
    expect(list?.attributes).toMatchObject({
      [McpAttributes.methodName]: 'tools/list',
      [McpAttributes.outcome]: 'ok',
      'mcpx.tools.listed': 5,
    });
    const pages = childrenOf(list!, 'tools/list');
    // Five tools, two a page: three pages, numbered, each answered.
    expect(pages.map((p) => p.attributes['mcpx.page']).sort()).toEqual([1, 2, 3]);
    for (const p of pages)
      expect(p.attributes).toMatchObject({
        [McpAttributes.methodName]: 'tools/list',
        [McpAttributes.outcome]: 'ok',
        'http.response.status_code': 200,
      });
    // The server heard each page under its own span.
    const heard = upstream.stats.traceparents.map((tp) => tp.split('-')[2]);
    for (const p of pages) expect(heard).toContain(p.spanContext().spanId);

    const text = await metrics();
    expect(sample(text, 'mcpx_discovery_total', { result: 'ok', code: 'ok', trigger: 'set' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(sample(text, 'mcpx_discovery_duration_ms_count', { result: 'ok', code: 'ok' })).toBeGreaterThanOrEqual(1);
  });

  it('a failed discovery carries its error code on the span and in the metrics', async () => {
    const port = await freePort();
    const res = await api.act('SetMcpServer', { name: 'nowhere', config: { url: `http://127.0.0.1:${port}/mcp` } });
    expect(res.server.status.state).toBe('error');
    const discover = named('registry.discover').find((s) => s.attributes[McpAttributes.server] === 'nowhere');
    expect(discover?.attributes[McpAttributes.outcome]).toBe('error');
    const code = discover?.attributes[McpAttributes.errorCode];
    expect(code).toBe('connect_failed');
    const [connect] = childrenOf(discover!, 'discovery.connect');
    expect(connect?.attributes).toMatchObject({ [McpAttributes.outcome]: 'error', [McpAttributes.errorCode]: code });
    const text = await metrics();
    expect(sample(text, 'mcpx_discovery_total', { result: 'error', code: 'connect_failed' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'mcpx_discovery_duration_ms_count', { result: 'error', code: 'connect_failed' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('a refused credential: unauthorized on the discovery, its connect and the request the server refused, with the HTTP status', async () => {
    const res = await api.act('SetMcpServer', {
      name: 'refused',
      config: { url: upstream.url, secretHeaders: { Authorization: 'Bearer sk-wrong-one' } },
    });
    expect(res.server.status.state).toBe('error');
    const discover = named('registry.discover').find((s) => s.attributes[McpAttributes.server] === 'refused');
    expect(discover?.attributes).toMatchObject({
      [McpAttributes.outcome]: 'error',
      [McpAttributes.errorCode]: 'unauthorized',
    });
    const [connect] = childrenOf(discover!, 'discovery.connect');
    expect(connect?.attributes).toMatchObject({
      [McpAttributes.outcome]: 'error',
      [McpAttributes.errorCode]: 'unauthorized',
    });
    const refusedRequests = finished().filter(
      (s) => s.attributes[McpAttributes.server] === 'refused' && s.attributes['http.response.status_code'] === 401,
    );
    expect(refusedRequests.length).toBeGreaterThanOrEqual(1);
    for (const s of refusedRequests)
      expect(s.attributes).toMatchObject({
        [McpAttributes.outcome]: 'error',
        [McpAttributes.errorCode]: 'unauthorized',
      });
    for (const s of finished().filter((x) => x.attributes[McpAttributes.server] === 'refused'))
      expect(JSON.stringify([s.attributes, s.events, s.status])).not.toContain('sk-wrong-one');
    expect(
      sample(await metrics(), 'mcpx_discovery_total', { result: 'error', code: 'unauthorized' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('the projector: a span per batch with the agents touched, the events published counted, its backlog gauged', async () => {
    const { agent } = await api.act('CreateAgent', { name: 'runner', definition: { mcpServers: ['paged'] } });
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: agent.id })).tools.length === 5 ? true : undefined),
      20_000,
      'the agent tools',
    );
    const batch = await eventually(
      async () => named('projector.agent').find((s) => s.attributes['mcpx.agent'] === agent.id),
      15_000,
      'the batch span',
    );
    expect(batch.attributes).toMatchObject({ [McpAttributes.agentsTouched]: 1, [McpAttributes.outcome]: 'changed' });
    const publish = await eventually(async () => childrenOf(batch, 'projector.publish')[0], 15_000, 'the publish span');
    expect(publish.attributes[McpAttributes.agentsTouched]).toBe(1);

    // A contract change reaches the granting agent: the server's batch touches one agent.
    upstream.setTools(['a', 'b', 'c', 'd', 'e', 'f'].map(tool));
    await api.act('RefreshMcpServer', { name: 'paged' });
    const discovered = await eventually(
      async () =>
        named('projector.discovered').find(
          (s) => s.attributes[McpAttributes.server] === 'paged' && s.attributes[McpAttributes.agentsTouched] === 1,
        ),
      15_000,
      'the change batch',
    );
    expect(discovered.attributes[McpAttributes.outcome]).toBe('changed');

    const text = await eventually(
      async () => {
        const t = await metrics();
        return (sample(t, 'mcpx_projector_events_published_total', { outcome: 'stored' }) ?? 0) >= 2 ? t : undefined;
      },
      15_000,
      'two events published',
    );
    const pending = sample(text, 'mcpx_consumer_backlog', { consumer: 'projector', state: 'pending' });
    const ackPending = sample(text, 'mcpx_consumer_backlog', { consumer: 'projector', state: 'ack_pending' });
    // Read from JetStream at the scrape: real numbers, not NaN (unreadable).
    expect(Number.isFinite(pending)).toBe(true);
    expect(Number.isFinite(ackPending)).toBe(true);
    expect(pending).toBeGreaterThanOrEqual(0);
  });

  it('the change stream: its opening, a break when the server goes, the re-opening when it is back; the streams open gauged', async () => {
    const opened = await eventually(
      async () =>
        named('discovery.listen').find(
          (s) => s.attributes[McpAttributes.server] === 'paged' && s.attributes[McpAttributes.outcome] === 'ok',
        ),
      15_000,
      'the stream opened',
    );
    expect(opened.attributes).toMatchObject({
      [McpAttributes.methodName]: 'subscriptions/listen',
      'mcpx.listen.reopen': false,
    });
    await eventually(
      async () => ((sample(await metrics(), 'mcpx_registry_listen_streams') ?? 0) >= 1 ? true : undefined),
      10_000,
      'one stream open',
    );

    const port = upstream.port;
    await upstream.close();
    const broke = await eventually(
      async () => named('discovery.listen.break').find((s) => s.attributes[McpAttributes.server] === 'paged'),
      15_000,
      'the break',
    );
    expect(broke.attributes[McpAttributes.outcome]).toBe('broken');
    await eventually(
      async () => ((sample(await metrics(), 'mcpx_registry_listen_streams') ?? 1) === 0 ? true : undefined),
      10_000,
      'no stream open',
    );

    upstream = await startTestMcpServer({
      era: 'modern',
      tools: ['a', 'b'].map(tool),
      port,
      requireHeader: { name: 'Authorization', value: `Bearer ${SECRET}` },
    });
    const reopened = await eventually(
      async () =>
        named('discovery.listen').find(
          (s) =>
            s.attributes[McpAttributes.server] === 'paged' &&
            s.attributes['mcpx.listen.reopen'] === true &&
            s.attributes[McpAttributes.outcome] === 'ok',
        ),
      30_000,
      'the stream re-opened',
    );
    expect(reopened.attributes[McpAttributes.methodName]).toBe('subscriptions/listen');
    // Attempts while the server was away failed with a code, not a message.
    for (const failed of named('discovery.listen').filter((s) => s.attributes[McpAttributes.outcome] === 'error'))
      expect(typeof failed.attributes[McpAttributes.errorCode]).toBe('string');
    await eventually(
      async () => ((sample(await metrics(), 'mcpx_registry_listen_streams') ?? 0) >= 1 ? true : undefined),
      10_000,
      'the stream open again',
    );
  }, 60_000);

  it('no span of discovery, the stream or the projector carries the secret', () => {
    const ours = finished().filter((s) =>
      /^(registry\.discover|discovery\.|tools\/list|server\/discover|initialize|projector\.)/.test(s.name),
    );
    expect(ours.length).toBeGreaterThan(5);
    for (const s of ours) {
      const dump = JSON.stringify({ name: s.name, attributes: s.attributes, events: s.events, status: s.status });
      expect(dump).not.toContain(SECRET);
      expect(dump).not.toContain('Bearer');
    }
  });
});
