import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';

/** A tool with an `x-mcp-header` parameter: an SDK v2 server refuses a call without its `Mcp-Param-Region`. */
const regional: TestTool = {
  name: 'regional',
  inputSchema: {
    type: 'object',
    properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, text: { type: 'string' } },
    required: ['region'],
  },
  handler: (args) => ({ content: [{ type: 'text', text: `${String(args.region)}: ${String(args.text)}` }] }),
};

/** A body past the outbound bound on one response (8 MiB by default). */
const huge: TestTool = {
  name: 'huge',
  handler: () => ({ content: [{ type: 'text', text: 'x'.repeat(9 * 1024 * 1024) }] }),
};

const traceIdOf = (tp: unknown): string => (typeof tp === 'string' ? (tp.split('-')[1] ?? '') : '');

/** What a modern call through the real proxy puts on the wire, seen by a real SDK v2 server. */
describe('a modern call through the proxy on the wire', () => {
  let system: ProxySystem;
  let modern: TestMcpServer;
  let legacy: TestMcpServer;

  beforeAll(async () => {
    [system, modern, legacy] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({ era: 'modern', tools: [echoTool(), regional] }),
      startTestMcpServer({ era: 'legacy', tools: [echoTool(), huge] }),
    ]);
    await system.setServer('modern', modern.url);
    await system.setServer('legacy', legacy.url);
    await system.createAgent('agent', ['modern', 'legacy'], 4);
  });

  afterAll(async () => {
    await system?.stop();
    await Promise.all([modern, legacy].map((s) => s?.close()));
  });

  it("the registry's discovery of the modern server carries its trace context in _meta too", () => {
    // Nothing has been called yet: every tools/list so far is the registry's.
    const lists = modern.stats.metaSeen.get('tools/list') ?? [];
    expect(lists.length).toBeGreaterThan(0);
    for (const meta of lists) expect(traceIdOf(meta.traceparent)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('sends every x-mcp-header parameter as Mcp-Param-<Name>, so the modern server takes the call', async () => {
    const before = modern.stats.calls;
    const out = await system.call('agent', 'r-header', 'modern__regional', { region: 'eu-west', text: 'hi' });
    expect(out.result.text).toBe('eu-west: hi');
    expect(modern.stats.calls).toBe(before + 1);
    expect(modern.stats.headersSeen.get('mcp-param-region')).toContain('eu-west');
    expect(modern.stats.headersSeen.get('mcp-name')).toContain('regional');
  });

  it("carries the call's trace context in _meta (traceparent of the caller's trace)", async () => {
    const span = system.telemetry.tracer.startSpan('test caller');
    const traceId = span.spanContext().traceId;
    try {
      const out = await context.with(trace.setSpan(context.active(), span), () =>
        system.call('agent', 'r-trace', 'modern__echo', { text: 'traced' }),
      );
      expect(out.result.text).toBe('echo: traced');
    } finally {
      span.end();
    }
    const metas = modern.stats.metaSeen.get('tools/call') ?? [];
    const meta = metas.find((m) => traceIdOf(m.traceparent) === traceId);
    expect(meta).toBeDefined();
    // The parent is the proxy's client span of the call, not the caller's own span.
    expect(String(meta?.traceparent).split('-')[2]).not.toBe(span.spanContext().spanId);
    expect(meta?.['io.modelcontextprotocol/protocolVersion']).toBe('2026-07-28');
  });

  it('a legacy call, the session opening and the direct call after it, carries the trace context in its headers', async () => {
    const span = system.telemetry.tracer.startSpan('test caller');
    const traceId = span.spanContext().traceId;
    try {
      await context.with(trace.setSpan(context.active(), span), () =>
        system.call('agent', 'r-legacy', 'legacy__echo', { text: 'a' }),
      );
      // The second call of the run goes by the direct path on the open session.
      const out = await context.with(trace.setSpan(context.active(), span), () =>
        system.call('agent', 'r-legacy', 'legacy__echo', { text: 'b' }),
      );
      expect(out.result.text).toBe('echo: b');
    } finally {
      span.end();
    }
    expect(legacy.stats.traceparents.filter((tp) => traceIdOf(tp) === traceId).length).toBeGreaterThanOrEqual(2);
  });

  it('a response cut at its bound fails the call with a typed error and is counted by bound', async () => {
    const err = await system.callError('agent', 'r-cut', 'legacy__huge', {});
    expect(err.code).not.toBe('ok');
    expect(err.message).not.toContain('xxxxxxxx');
    const proxy = system.proxies[0];
    if (proxy === undefined) throw new Error('no proxy');
    const metrics = await (await fetch(`${proxy.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_outbound_responses_cut_total\{[^}]*bound="max\w+"[^}]*\} [1-9]/);
    // The run and the server go on.
    expect((await system.call('agent', 'r-cut', 'legacy__echo', { text: 'after' })).result.text).toBe('echo: after');
  });
});
