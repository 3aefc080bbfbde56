import { connect, type NatsConnection } from '@nats-io/transport-node';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { createProjectedAgent } from '../support/fixtures/agents.js';
import { serviceUrls } from '../support/env.js';
import { InProcessSystem, eventually } from '../support/system.js';

const SECRET = 'sk-live-7f3a9c1e-THIS-MUST-NEVER-LEAK';

/**
 * The three services in one process, sharing an in-memory span exporter and a log sink, so a test
 * can read one trace end to end and prove a secret never leaves the secret store.
 */
describe('one trace from action or call to the remote server; secrets never leak', () => {
  const exporter = new InMemorySpanExporter();
  const logLines: string[] = [];
  const natsPayloads: string[] = [];
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let nc: NatsConnection;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-test', spanExporter: exporter });
    system = await InProcessSystem.start({
      telemetry,
      logSink: (line) => logLines.push(line),
      env: { LOG_LEVEL: 'debug' },
    });
    nc = await connect({ servers: serviceUrls().nats });
    // Every message of this system's namespace, raw: a secret would show up in its bytes.
    nc.subscribe(`${system.env.NATS_PREFIX}>`, {
      callback: (_e, msg) => {
        natsPayloads.push(
          Buffer.from(msg.data).toString('latin1') +
            JSON.stringify([...(msg.headers?.keys() ?? [])].map((k) => [k, msg.headers?.values(k)])),
        );
      },
    });
    nc.subscribe('_INBOX.>', {
      callback: (_e, msg) => {
        natsPayloads.push(Buffer.from(msg.data).toString('latin1'));
      },
    });
  });

  afterAll(async () => {
    await nc?.drain();
    await system?.stop();
    await telemetry?.shutdown();
  });

  const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
  const traceIdOf = (tp: string): string => tp.split('-')[1] ?? '';
  /** The trace ids a server received: in the `traceparent` header, or (modern) in a request's `_meta`. */
  const traceIdsSeen = (up: TestMcpServer): string[] =>
    [
      ...up.stats.traceparents,
      ...[...up.stats.metaSeen.values()].flat().map((m) => (typeof m.traceparent === 'string' ? m.traceparent : '')),
    ].map(traceIdOf);

  /** Both eras in one system: the same trace and the same secret, to a modern and to a legacy server. */
  describe.each(['modern', 'legacy'] as const)('a %s server', (era) => {
    let upstream: TestMcpServer;
    beforeAll(async () => {
      upstream = await startTestMcpServer({ era, requireHeader: { name: 'Authorization', value: `Bearer ${SECRET}` } });
    });
    afterAll(async () => {
      await upstream?.close();
    });

    it('follows SetMcpServer from the action through discovery to the server and into the projector', async () => {
      const api = new ApiClient(system.apiUrl);
      const res = await api.act('SetMcpServer', {
        name: 'secure',
        config: { url: upstream.url, secretHeaders: { Authorization: `Bearer ${SECRET}` } },
      });
      expect(res.server.status.state).toBe('ok');
      expect(res.server.secretHeaderNames).toEqual(['Authorization']);
      expect(res.server.hasSecrets).toBe(true);

      const action = spans('action SetMcpServer').at(-1);
      expect(action).toBeDefined();
      const traceId = action?.spanContext().traceId ?? '';
      const discover = spans('registry.discover').find((s) => s.spanContext().traceId === traceId);
      expect(discover).toBeDefined();
      // The remote server received the same trace context.
      expect(traceIdsSeen(upstream)).toContain(traceId);
      // The projector continued the trace across JetStream.
      const projected = await eventually(
        async () => spans('projector.discovered').find((s) => s.spanContext().traceId === traceId),
        15_000,
        'the projector span',
      );
      expect(projected.parentSpanContext?.traceId).toBe(traceId);
    });

    it("starts an action's trace anew, linked to the client's traceparent: the server never sees the client's trace", async () => {
      const api = new ApiClient(system.apiUrl);
      const clientTrace = era === 'modern' ? '6a1e5b2c3d4f5a6b7c8d9e0f1a2b3c4d' : '7b2f6c3d4e5a6b7c8d9e0f1a2b3c4d5e';
      const res = await fetch(new URL('/v1/actions', system.apiUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${clientTrace}-b7ad6b7169203331-01` },
        body: JSON.stringify(
          api.envelope({
            type: 'SetMcpServer',
            name: 'linked',
            config: { url: upstream.url, secretHeaders: { Authorization: `Bearer ${SECRET}` } },
          }),
        ),
      });
      expect(res.status).toBe(200);
      const action = spans('action SetMcpServer').find((s) => s.links.some((l) => l.context.traceId === clientTrace));
      expect(action).toBeDefined();
      const traceId = action!.spanContext().traceId;
      expect(traceId).not.toBe(clientTrace);
      expect(action!.parentSpanContext).toBeUndefined();
      expect(action!.links).toEqual([
        expect.objectContaining({
          context: expect.objectContaining({ traceId: clientTrace, spanId: 'b7ad6b7169203331' }),
        }),
      ]);
      // Discovery runs in the action's new trace, and that is what the server received.
      expect(spans('registry.discover').some((s) => s.spanContext().traceId === traceId)).toBe(true);
      expect(traceIdsSeen(upstream)).toContain(traceId);
      expect(traceIdsSeen(upstream)).not.toContain(clientTrace);
    });

    it('follows a call from the runtime through the proxy to the server, sending the secret only there', async () => {
      const api = new ApiClient(system.apiUrl);
      await api.act('SetMcpServer', {
        name: 'secure',
        config: { url: upstream.url, secretHeaders: { Authorization: `Bearer ${SECRET}` } },
      });
      const agentId = await createProjectedAgent(api, 'runner', ['secure'], 2);

      const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
      const root = telemetry.tracer.startSpan('agent.turn');
      const outcome = await context.with(trace.setSpan(context.active(), root), () =>
        proxy.call({
          account: api.principal,
          agent: agentId,
          run: 'trace-run',
          tool: 'secure__echo',
          arguments: { text: 'traced' },
        }),
      );
      root.end();
      expect(outcome.result.text).toBe('echo: traced');
      const traceId = root.spanContext().traceId;
      await eventually(
        async () => spans('proxy.call').find((s) => s.spanContext().traceId === traceId),
        5_000,
        'the proxy span',
      );
      expect(spans('mcp tools/call').some((s) => s.spanContext().traceId === traceId)).toBe(true);
      expect(traceIdsSeen(upstream)).toContain(traceId);
      await proxy.endRun(api.principal, 'trace-run');

      // A failing call carries no secret either (the server's 401 would echo nothing of ours).
      const listed = await api.act('ListMcpServers');
      const responses = JSON.stringify(listed) + JSON.stringify(outcome);

      // The secret went to the server that needs it…
      expect(upstream.stats.headersSeen.get('authorization')).toContain(`Bearer ${SECRET}`);
      // …and nowhere else: responses, log lines, NATS messages (events, requests, replies), spans.
      const spanText = JSON.stringify(
        exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events, st: s.status })),
      );
      for (const [where, text] of [
        ['responses', responses],
        ['logs', logLines.join('\n')],
        ['nats', natsPayloads.join('\n')],
        ['spans', spanText],
      ] as const) {
        expect(text.length, where).toBeGreaterThan(0);
        expect(text.includes(SECRET), `secret found in ${where}`).toBe(false);
        expect(text.includes('7f3a9c1e'), `part of the secret found in ${where}`).toBe(false);
      }
      expect(logLines.length).toBeGreaterThan(3);
    });
  });
});
