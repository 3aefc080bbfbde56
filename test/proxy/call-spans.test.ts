import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireError } from '@mcpx/contracts';
import type { ProxyClient } from '@mcpx/proxy-client';
import { type CallInput } from '@mcpx/proxy-client';
import type { Telemetry, TraceContextKind } from '@mcpx/telemetry';
import { addTool, echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { dropTool } from '../approvals/approval-tools.js';
import { ApiClient } from '../support/api-client.js';
import { eventually, type InProcessSystem } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';
import { tracedCall } from '../support/fixtures/traced-call.js';

/** Argument values that must never reach a span (attributes, events or status). */
const ARG_TEXT = 'arg-value-5b1f0c-never-in-a-span';
const ARG_BAD = 'arg-value-9d2e7a-not-a-number';

/**
 * The call path's spans, read from the real services in this process through an
 * in-memory exporter: `proxy.call` and its steps (`proxy.validate`, `proxy.grant`,
 * `proxy.approval`, `proxy.pool.acquire`, `mcp tools/call`) with the MCP and GenAI semantic
 * convention attributes, for a modern and a legacy server; with the proxy's own trace context in
 * production (`explicit`: it does not follow awaits) and the one of a process shared with others.
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  'call-path spans named by convention (%s trace context)',
  (kind) => {
    const exporter = new InMemorySpanExporter();
    let services: TracedSystem;
    let telemetry: Telemetry;
    let system: InProcessSystem;
    let proxy: ProxyClient;

    beforeAll(async () => {
      services = await startTracedSystem(kind, 'mcpx-spans-test', exporter);
      ({ telemetry, system, proxy } = services);
    });

    afterAll(async () => {
      await services?.stop();
    });

    /** Runs a call under a root span of its own; the trace's finished spans once `proxy.call` ended. */
    const traced = async (input: CallInput): Promise<{ spans: ReadableSpan[]; error?: WireError }> => {
      const { spans, error } = await tracedCall(telemetry, exporter, proxy, input);
      return { spans, ...(error !== undefined ? { error } : {}) };
    };
    const one = (spans: ReadableSpan[], name: string): ReadableSpan => {
      const found = spans.filter((s) => s.name === name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };
    /**
     * The spans' names, sorted, less quiet discovery's listing of a connection the call opened
     * (`proxy.tools.observe`: it ends on its own time, after the call or before;
     * quiet-discovery-spans.test.ts holds it).
     */
    const names = (spans: ReadableSpan[]): string[] =>
      spans
        .map((s) => s.name)
        .filter((n) => n !== 'proxy.tools.observe')
        .sort();

    describe.each(['modern', 'legacy'] as const)('a %s server', (era) => {
      let upstream: TestMcpServer;
      let api: ApiClient;
      let agent: string;

      beforeAll(async () => {
        upstream = await startTestMcpServer({ era, tools: [echoTool(), addTool(), dropTool()] });
        api = new ApiClient(system.apiUrl);
        await api.act('SetMcpServer', { name: 'db', config: { url: upstream.url } });
        ({
          agent: { id: agent },
        } = await api.act<{ agent: { id: string } }>('CreateAgent', {
          name: 'spans',
          definition: { mcpServers: ['db'] },
        }));
        await eventually(
          async () =>
            (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length === 3 ? true : undefined,
          15_000,
          'tools projected',
        );
      });

      afterAll(async () => {
        await upstream?.close();
      });

      const call = (run: string, tool: string, args: Record<string, unknown>): CallInput => ({
        account: api.principal,
        agent,
        run,
        tool,
        arguments: args,
      });

      it('a call: the call span and its steps, with the MCP and GenAI attributes', async () => {
        const { spans, error } = await traced(call('spans-1', 'db__echo', { text: ARG_TEXT }));
        expect(error).toBeUndefined();
        expect(names(spans)).toEqual([
          'agent.turn',
          'mcp tools/call',
          'proxy.call',
          'proxy.grant',
          'proxy.pool.acquire',
          'proxy.validate',
        ]);
        const server = one(spans, 'proxy.call');
        expect(server.kind).toBe(SpanKind.SERVER);
        expect(server.attributes).toMatchObject({
          'mcp.method.name': 'tools/call',
          'gen_ai.tool.name': 'db__echo',
          'mcpx.outcome': 'ok',
          'mcp.server': 'db',
        });
        expect(server.attributes['error.type']).toBeUndefined();
        const parent = server.spanContext().spanId;
        for (const step of ['proxy.validate', 'proxy.grant', 'proxy.pool.acquire', 'mcp tools/call']) {
          const s = one(spans, step);
          expect(s.parentSpanContext?.spanId, step).toBe(parent);
          expect(s.attributes['mcpx.outcome'], step).toBe('ok');
          expect(s.attributes['mcpx.server'], step).toBe('db');
          expect(s.status.code, step).not.toBe(SpanStatusCode.ERROR);
        }
        expect(one(spans, 'proxy.validate').attributes['gen_ai.tool.name']).toBe('echo');
        // The run's first call opened the connection: its wait is the handshake (or, modern, the era's first use).
        expect(one(spans, 'proxy.pool.acquire').attributes).toMatchObject({
          'mcpx.pool.handshake': true,
          'mcpx.era': era,
        });
        const upstreamCall = one(spans, 'mcp tools/call');
        expect(upstreamCall.kind).toBe(SpanKind.CLIENT);
        expect(upstreamCall.attributes).toMatchObject({
          'mcp.method.name': 'tools/call',
          'gen_ai.tool.name': 'echo',
          'mcp.protocol.version': era === 'modern' ? '2026-07-28' : expect.any(String),
        });
        // The server received the upstream span's context (the header; a modern request's `_meta` too)…
        const sent = `${upstreamCall.spanContext().traceId}-${upstreamCall.spanContext().spanId}`;
        expect(upstream.stats.traceparents.filter((tp) => tp.includes(sent))).toHaveLength(1);
        const inMeta = (upstream.stats.metaSeen.get('tools/call') ?? []).filter((m) =>
          String(m.traceparent).includes(sent),
        );
        expect(inMeta).toHaveLength(era === 'modern' ? 1 : 0);
        // …and a legacy session's handshake the acquire span's (a modern server's verdict, known
        // from its discovery, is adopted without a round trip).
        const acquired = one(spans, 'proxy.pool.acquire').spanContext();
        const handshake = upstream.stats.traceparents.filter((tp) =>
          tp.includes(`${acquired.traceId}-${acquired.spanId}`),
        );
        expect(handshake.length > 0).toBe(era === 'legacy');
        const sessionId = upstreamCall.attributes['mcp.session.id'];
        if (era === 'modern') expect(sessionId).toBeUndefined();
        else expect(upstream.stats.headersSeen.get('mcp-session-id')).toContain(sessionId);

        // The run's next call finds its connection ready: no acquire span.
        const again = await traced(call('spans-1', 'db__echo', { text: ARG_TEXT }));
        expect(names(again.spans)).toEqual([
          'agent.turn',
          'mcp tools/call',
          'proxy.call',
          'proxy.grant',
          'proxy.validate',
        ]);
      });

      it('a call refused by validation: the validate span says why, nothing went upstream', async () => {
        const calls = upstream.stats.calls;
        const { spans, error } = await traced(call('spans-2', 'db__add', { a: ARG_BAD, b: 2 }));
        expect(error?.code).toBe('invalid_arguments');
        expect(names(spans)).toEqual(['agent.turn', 'proxy.call', 'proxy.validate']);
        const validate = one(spans, 'proxy.validate');
        expect(validate.attributes).toMatchObject({
          'mcpx.outcome': 'invalid_arguments',
          'error.type': 'invalid_arguments',
        });
        expect(validate.status).toEqual({ code: SpanStatusCode.ERROR, message: 'invalid_arguments' });
        expect(one(spans, 'proxy.call').attributes).toMatchObject({
          'mcpx.outcome': 'invalid_arguments',
          'error.type': 'invalid_arguments',
        });
        expect(upstream.stats.calls).toBe(calls);
      });

      it('an always_ask tool: the approval span ends with approval_required, nothing went upstream', async () => {
        const calls = upstream.stats.calls;
        const { spans, error } = await traced(call('spans-3', 'db__drop_table', { table: ARG_TEXT }));
        expect(error?.code).toBe('approval_required');
        expect(names(spans)).toEqual(['agent.turn', 'proxy.approval', 'proxy.call', 'proxy.grant', 'proxy.validate']);
        expect(one(spans, 'proxy.approval').attributes).toMatchObject({
          'gen_ai.tool.name': 'drop_table',
          'mcpx.outcome': 'approval_required',
          'error.type': 'approval_required',
        });
        expect(one(spans, 'proxy.call').attributes['error.type']).toBe('approval_required');
        expect(upstream.stats.calls).toBe(calls);
      });

      it('an upstream error: the upstream span and the call span carry its code', async () => {
        await upstream.close();
        const { spans, error } = await traced(call('spans-1', 'db__echo', { text: ARG_TEXT }));
        expect(error).toBeDefined();
        const code = error!.code;
        expect(['transport_error', 'maybe_executed']).toContain(code);
        // The request failed on the connection it had, or (the session known gone) on the way to a new one.
        const failed =
          spans.find((s) => s.name === 'mcp tools/call' && s.attributes['error.type'] !== undefined) ??
          one(spans, 'proxy.pool.acquire');
        expect(failed.attributes).toMatchObject({ 'mcpx.outcome': code, 'error.type': code });
        expect(failed.status.code).toBe(SpanStatusCode.ERROR);
        expect(one(spans, 'proxy.call').attributes).toMatchObject({ 'mcpx.outcome': code, 'error.type': code });
      });
    });

    it('no argument value appears in any span', () => {
      const text = JSON.stringify(
        exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events, st: s.status })),
      );
      expect(text).toContain('proxy.validate');
      expect(text.includes(ARG_TEXT)).toBe(false);
      expect(text.includes(ARG_BAD)).toBe(false);
    });
  },
);
