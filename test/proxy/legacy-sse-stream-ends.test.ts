import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import type { ProxyClient } from '@mcpx/proxy-client';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { echoTool, holdTool, startTestMcpServer, type HeldCalls, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { createAgentListing } from '../support/fixtures/agents.js';
import { eventually } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';

/**
 * Far beyond the test's own timeout: a call still waiting when the stream ended was not failed
 * at the end (it would otherwise wait for this and fail with `timeout`).
 */
const CALL_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 30_000;

/**
 * On the legacy HTTP+SSE transport (2024-11-05) every answer of a session comes on its event
 * stream. When the server ends that stream or its socket is reset while a call waits, the call
 * fails at once as `maybe_executed` (not at its timeout), and the run's next call is answered on
 * a fresh session (the pool replaces the closed connection).
 */
describe('a legacy SSE session whose event stream ends while a call waits', () => {
  const held: HeldCalls = new Map();
  let traced: TracedSystem;
  let proxy: ProxyClient;
  let api: ApiClient;
  let upstream: TestMcpServer;
  let agent: string;

  beforeAll(async () => {
    [traced, upstream] = await Promise.all([
      startTracedSystem('async', 'mcpx-sse-ends-test', new InMemorySpanExporter()),
      startTestMcpServer({ era: 'legacy', transport: 'sse', tools: [holdTool(held), echoTool()] }),
    ]);
    ({ proxy, api } = traced);
    await api.act('SetMcpServer', { name: 'ls', config: { url: upstream.url, transport: 'sse' } });
    agent = await createAgentListing(api, 'sse-ends', ['ls'], ['ls__hold', 'ls__echo']);
  }, 120_000);

  afterAll(async () => {
    await traced?.stop();
    await upstream?.close();
  });

  it.each([
    ['end', /event stream was closed by the server/],
    ['reset', /event stream broke/],
  ] as const)(
    'the server %ss it: the call fails at once as maybe_executed; the next call gets a fresh session',
    async (how, said) => {
      const run = `sse-ends-${how}`;
      const waiting = proxy
        .call({
          account: api.principal,
          agent,
          run,
          tool: 'ls__hold',
          arguments: { tag: how },
          timeoutMs: CALL_TIMEOUT_MS,
        })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      await eventually(async () => held.get(how)?.started, 10_000, 'the held call started');
      // Every session open on the server (the earlier test's fresh one too).
      expect(upstream.breakSseStreams(how)).toBeGreaterThan(0);

      const error = await waiting;
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).code).toBe('maybe_executed');
      expect((error as WireError).message).toMatch(said);

      const next = await proxy.call({
        account: api.principal,
        agent,
        run,
        tool: 'ls__echo',
        arguments: { text: `after the ${how}` },
        timeoutMs: CALL_TIMEOUT_MS,
      });
      expect(JSON.stringify(next)).toContain(`echo: after the ${how}`);
    },
    TEST_TIMEOUT_MS,
  );
});
