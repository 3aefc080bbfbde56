import { connect, type NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects, type InputRequestView } from '@mcpx/contracts';
import { ProxyClient, inputRequiredOf, type CallInput } from '@mcpx/proxy-client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { InProcessSystem, eventually } from '../support/system.js';
import { tracedCall } from '../support/fixtures/traced-call.js';
import { INPUT_TOOLS } from './input-system.js';

/** A value typed into the form that must never reach a span. */
const TYPED = 'analytics-7f3c1e-never-in-a-span';

/**
 * The input-request path in the call's trace: a call that stops for input says so on its
 * `proxy.call` span (its outcome, the questions asked), and the re-sent call says which round it
 * resumes; neither the server's state nor what the person typed is in any span.
 */
describe('input requests in the call spans', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let upstream: InputMcpServer;
  let nc: NatsConnection;
  let proxy: ProxyClient;
  let api: ApiClient;
  let agent: string;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-input-spans-test', spanExporter: exporter });
    [system, upstream] = await Promise.all([
      InProcessSystem.start({ telemetry, logSink: () => {} }),
      startInputMcpServer(),
    ]);
    nc = await connect({ servers: serviceUrls().nats });
    proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX ?? ''));
    api = new ApiClient(system.apiUrl);
    await api.act('SetMcpServer', { name: 'ops', config: { url: upstream.url } });
    agent = (
      await api.act<{ agent: { id: string } }>('CreateAgent', { name: 'spans', definition: { mcpServers: ['ops'] } })
    ).agent.id;
    await eventually(
      async () =>
        (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length >= INPUT_TOOLS
          ? true
          : undefined,
      15_000,
      'tools projected',
    );
  });

  afterAll(async () => {
    await nc?.drain();
    await system?.stop();
    await upstream?.close();
    await telemetry?.shutdown();
  });

  /** Runs a call under a root span of its own; its `proxy.call` span and every span of the trace. */
  const traced = (input: CallInput) => tracedCall(telemetry, exporter, proxy, input);
  const eventsOf = (s: ReadableSpan): Array<{ name: string; attributes: Record<string, unknown> }> =>
    s.events.map((e) => ({ name: e.name, attributes: { ...e.attributes } }));

  it('a stopped call and each resumed round are on the proxy.call span; no state or answer is', async () => {
    const call = (inputRequestId?: string): CallInput => ({
      account: api.principal,
      agent,
      run: 'sp-1',
      tool: 'ops__provision',
      arguments: {},
      ...(inputRequestId ? { inputRequestId } : {}),
    });

    const first = await traced(call());
    const asked = inputRequiredOf(first.error);
    expect(asked?.round).toBe(1);
    expect(first.call.attributes['mcpx.outcome']).toBe('input_required');
    expect(eventsOf(first.call)).toContainEqual({ name: 'input requested', attributes: { 'mcpx.input_questions': 1 } });

    await api.act('AnswerInputRequest', { id: asked!.inputRequestId, action: 'accept', content: { name: TYPED } });
    const second = await traced(call(asked!.inputRequestId));
    const next = inputRequiredOf(second.error);
    expect(next?.round).toBe(2);
    expect(second.call.attributes['mcpx.input_round']).toBe(1);
    expect(eventsOf(second.call).map((e) => e.name)).toEqual(
      expect.arrayContaining(['input request answered: resuming the call', 'input requested']),
    );

    await api.act('AnswerInputRequest', {
      id: next!.inputRequestId,
      key: 'region',
      action: 'accept',
      content: { region: 'eu-west-1' },
    });
    await api.act('AnswerInputRequest', {
      id: next!.inputRequestId,
      key: 'tags',
      action: 'accept',
      content: { tags: ['pii'] },
    });
    const done = await traced(call(next!.inputRequestId));
    expect(done.error).toBeUndefined();
    expect(done.call.attributes).toMatchObject({ 'mcpx.outcome': 'ok', 'mcpx.input_round': 2 });
    expect(upstream.stats.statesSeen.at(-1)).toContain(TYPED);

    // What the person typed and the server's state are in no span (the status says the error's message, as for any error).
    const all = JSON.stringify(
      [...first.spans, ...second.spans, ...done.spans].map((s) => ({
        name: s.name,
        attributes: s.attributes,
        events: s.events,
        status: s.status,
      })),
    );
    expect(all).not.toContain(TYPED);
    expect(all).not.toMatch(/requestState|eu-west-1/);
    expect(
      ((await api.act<{ inputRequests: InputRequestView[] }>('ListInputRequests', {})).inputRequests as unknown[])
        .length,
    ).toBe(0);
  });
});
