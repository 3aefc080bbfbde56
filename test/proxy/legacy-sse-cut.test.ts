import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { WireError } from '@mcpx/contracts';
import type { ProxyClient } from '@mcpx/proxy-client';
import type { Telemetry, TraceContextKind } from '@mcpx/telemetry';
import { hostileContentTools } from '../servers/content-tools.js';
import { echoTool, holdTool, startTestMcpServer, type HeldCalls, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { createAgentListing } from '../support/fixtures/agents.js';
import { eventually } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';
import { tracedCall } from '../support/fixtures/traced-call.js';

/** The default bound on one event of an event stream: 8 MiB. */
const BOUND_BYTES = 8 * 1024 * 1024;

/**
 * Far beyond what a cut takes to be heard: a call still waiting then was not failed at the cut
 * (it would otherwise wait for this and fail with `timeout`).
 */
const CALL_TIMEOUT_MS = 30_000;

/**
 * On the legacy HTTP+SSE transport (2024-11-05) a call's answer arrives on the session's event
 * stream: an answer over the bound of one event (a 9 MiB blob, 12 MiB as base64) cuts that stream.
 * The call fails at the cut (not at its timeout) naming the bound, `maybe_executed` as a cut answer
 * is on Streamable HTTP, and its upstream span carries `outbound.response_cut`; another call in
 * flight on the session, whose answer can no longer come, fails too; the broken session is
 * replaced, so the next call works. With the proxy's own trace context (`explicit`) and the one of
 * a process shared with others.
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  'a cut answer on a legacy SSE session (%s trace context)',
  (kind) => {
    const exporter = new InMemorySpanExporter();
    const held: HeldCalls = new Map();
    let traced: TracedSystem;
    let telemetry: Telemetry;
    let proxy: ProxyClient;
    let api: ApiClient;
    let upstream: TestMcpServer;
    let agent: string;

    beforeAll(async () => {
      [traced, upstream] = await Promise.all([
        startTracedSystem(kind, 'mcpx-legacy-sse-cut-test', exporter),
        startTestMcpServer({
          era: 'legacy',
          transport: 'sse',
          tools: [...hostileContentTools(), holdTool(held), echoTool()],
        }),
      ]);
      ({ telemetry, proxy, api } = traced);
      await api.act('SetMcpServer', { name: 'ls', config: { url: upstream.url, transport: 'sse' } });
      agent = await createAgentListing(api, 'sse-cut', ['ls'], ['ls__blob']);
    }, 120_000);

    afterAll(async () => {
      await traced?.stop();
      await upstream?.close();
    });

    it('fails the call at the cut, and the call in flight beside it; the next call gets a fresh session', async () => {
      // A call in flight on the same session (a legacy session is its run's), whose answer is not due for a minute.
      const beside = proxy
        .call({
          account: api.principal,
          agent,
          run: `sse-cut-${kind}`,
          tool: 'ls__hold',
          arguments: { tag: `beside-${kind}` },
          timeoutMs: CALL_TIMEOUT_MS,
        })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      await eventually(async () => held.get(`beside-${kind}`)?.started, 10_000, 'the held call started');

      const { spans, error } = await tracedCall(telemetry, exporter, proxy, {
        account: api.principal,
        agent,
        run: `sse-cut-${kind}`,
        tool: 'ls__blob',
        arguments: { mib: 9 },
        timeoutMs: CALL_TIMEOUT_MS,
      });
      expect(error?.code).toBe('maybe_executed');
      expect(error?.message).toMatch(/too large: .*\(bound maxSseEventBytes = 8388608/);
      const upstreamCall = spans.filter((s) => s.name === 'mcp tools/call');
      expect(upstreamCall).toHaveLength(1);
      expect(upstreamCall[0]!.events.filter((e) => e.name === 'outbound.response_cut')).toEqual([
        expect.objectContaining({
          attributes: { 'mcpx.bound': 'maxSseEventBytes', 'mcpx.bound.limit': BOUND_BYTES },
        }),
      ]);

      // The call beside it cannot be answered on the cut stream: it fails too, not at its timeout.
      const besideError = await beside;
      expect(besideError).toBeInstanceOf(WireError);
      expect((besideError as WireError).code).toBe('maybe_executed');
      expect((besideError as WireError).message).toMatch(/too large: .*\(bound maxSseEventBytes = 8388608/);

      // The broken session is not reused: the run's next call opens a fresh one and is answered.
      const next = await proxy.call({
        account: api.principal,
        agent,
        run: `sse-cut-${kind}`,
        tool: 'ls__echo',
        arguments: { text: 'after the cut' },
        timeoutMs: CALL_TIMEOUT_MS,
      });
      expect(JSON.stringify(next)).toContain('echo: after the cut');
    }, 120_000);
  },
);
