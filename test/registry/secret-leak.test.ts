import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const SECRET = 'sk-echo-91c4d2-MUST-NOT-LEAK';

/**
 * Outputs the e2e leak test does not reach: the error of a failed discovery against servers that
 * echo every request header back in their error bodies (4xx, so both transports are tried, and
 * 5xx), and the `GET /v1/events` stream. Everything is captured: responses, the event stream, log
 * lines, every NATS message of the namespace, and every span.
 */
describe('secrets never leak through discovery errors or the event stream', () => {
  const exporter = new InMemorySpanExporter();
  const logLines: string[] = [];
  let telemetry: Telemetry;
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let modern: TestMcpServer;
  let echo4xx: FrontServer;
  let echo5xx: FrontServer;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-leak-test', spanExporter: exporter });
    [h, upstream, modern, echo4xx, echo5xx] = await Promise.all([
      RegistryHarness.start({ telemetry, logSink: (l) => logLines.push(l), env: { LOG_LEVEL: 'debug' } }),
      startTestMcpServer({ requireHeader: { name: 'Authorization', value: `Bearer ${SECRET}` } }),
      startTestMcpServer({ era: 'modern', requireHeader: { name: 'Authorization', value: `Bearer ${SECRET}` } }),
      startFrontServer({ mode: 'echo', status: 400 }),
      startFrontServer({ mode: 'echo', status: 500 }),
    ]);
  });
  afterAll(async () => {
    await h?.stop();
    await Promise.all([upstream?.close(), modern?.close(), echo4xx?.close(), echo5xx?.close()]);
    await telemetry?.shutdown();
  });

  it('captures everything and finds the secret only where it belongs', async () => {
    const api = h.api();
    const nats = await h.capture('>');
    // The event stream of the account, read as the console does.
    const envelope = Buffer.from(JSON.stringify(api.envelope({ type: 'SubscribeEvents' }))).toString('base64url');
    const abort = new AbortController();
    const res = await fetch(`${h.apiUrl}/v1/events?envelope=${envelope}`, { signal: abort.signal });
    expect(res.status).toBe(200);
    let stream = '';
    const reading = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) stream += decoder.decode(chunk);
      } catch {
        // aborted
      }
    })();

    const responses: unknown[] = [];
    const secretHeaders = { Authorization: `Bearer ${SECRET}` };
    const four = await api.act('SetMcpServer', {
      name: 'echo4',
      config: { url: `${echo4xx.origin}/mcp`, secretHeaders },
    });
    const five = await api.act('SetMcpServer', {
      name: 'echo5',
      config: { url: `${echo5xx.origin}/mcp`, headers: { 'X-Static': 'plain' }, secretHeaders },
    });
    responses.push(four, five);
    // They did echo it: the error bodies carried the header, and the record's error was scrubbed.
    expect(four.server.status.state).toBe('error');
    expect(four.server.status.error).toContain('HTTP 400');
    expect(four.server.status.error).toContain('[redacted]');
    expect(five.server.status.error).toContain('HTTP 500');
    expect(echo4xx.requests).toBeGreaterThanOrEqual(2); // Streamable HTTP, then SSE
    const good = await api.act('SetMcpServer', { name: 'good', config: { url: upstream.url, secretHeaders } });
    expect(good.server.status.state).toBe('ok');
    // A modern server gets the secret on every request (no session holds it): still nowhere else.
    const fresh = await api.act('SetMcpServer', { name: 'fresh', config: { url: modern.url, secretHeaders } });
    expect(fresh.server.status).toMatchObject({ state: 'ok', era: 'modern' });
    responses.push(good, fresh);
    const { agent } = await api.act('CreateAgent', {
      name: 'a',
      definition: { mcpServers: ['good', 'fresh', 'echo4'] },
    });
    responses.push(
      await api.act('RefreshMcpServer', { name: 'echo4' }),
      await api.act('RefreshMcpServer', { name: 'good' }),
      await api.act('RefreshMcpServer', { name: 'fresh' }),
    );
    responses.push(await api.act('ListMcpServers'), await api.act('GetAgent', { agent: agent.id }));
    responses.push(
      await eventually(
        async () => {
          const t = await api.act('ListAgentTools', { agent: agent.id });
          return t.tools.length === 4 ? t : undefined;
        },
        15_000,
        'projection',
      ),
    );
    await eventually(
      async () => (stream.includes('agent-tools-changed') && stream.includes('"server":"echo5"') ? true : undefined),
      10_000,
      'events on the stream',
    );
    abort.abort();
    await reading;
    await h.nc.flush();
    nats.stop();

    expect(upstream.stats.headersSeen.get('authorization')).toContain(`Bearer ${SECRET}`);
    expect(modern.stats.headersSeen.get('authorization')).toContain(`Bearer ${SECRET}`);
    const spans = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events, st: s.status })),
    );
    const natsText = nats.messages.map((m) => Buffer.from(m.data).toString('latin1')).join('\n');
    for (const [where, text] of [
      ['responses', JSON.stringify(responses)],
      ['event stream', stream],
      ['logs', logLines.join('\n')],
      ['nats', natsText],
      ['spans', spans],
    ] as const) {
      expect(text.length, where).toBeGreaterThan(0);
      expect(text.includes(SECRET), `secret found in ${where}`).toBe(false);
      expect(text.includes('91c4d2'), `part of the secret found in ${where}`).toBe(false);
    }
    expect(stream).toContain('mcp-servers-changed');
  });
});
