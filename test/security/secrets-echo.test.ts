import { connect, type NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { makeSubjects } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { loadEndpointConfig, startEndpoint, type RunningEndpoint } from '@mcpx/endpoint';
import { ProxyClient } from '@mcpx/proxy-client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import {
  ECHO_TOOLS,
  FORM_NAMES,
  MODERN_ECHO_TOOLS,
  echoedForms,
  modernEchoTools,
  startSecretEchoServer,
  type SecretEchoServer,
} from '../servers/secret-echo-server.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { InProcessSystem, eventually } from '../support/system.js';

/** Every echoing tool, by its agent-facing name: the legacy server's and the modern one's. */
const TOOLS = [...ECHO_TOOLS.map((t) => `echo__${t}`), ...MODERN_ECHO_TOOLS.map((t) => `modern__${t}`)];

/**
 * The calls a face makes: each form once, through a tool that turns with the form (`offset` turns
 * each face differently, so the faces together cover more pairs), and every form at once in the
 * results (`isError` and ordinary, of both servers: a result is not cut to 300 characters).
 */
function callsOf(offset: number): Array<{ tool: string; arguments: Record<string, string> }> {
  const each = FORM_NAMES.map((form, i) => ({ tool: TOOLS[(i + offset) % TOOLS.length]!, arguments: { form } }));
  const all = ['echo__is_error', 'echo__echo_result', 'modern__is_error', 'modern__echo_result'].map((tool) => ({
    tool,
    arguments: {},
  }));
  return [...each, ...all];
}

/** The bearer token: `/`, `+` and `=` so its encoded forms differ from it. */
const TOKEN = 'sk/Echo+7c41d9e2b8=Leak';
/** The URL's query key (a vendor that takes its key only there). */
const QUERY_KEY = 'qk-5e8a1f03c6-QueryKey';

/**
 * Substrings that give a secret away in any form the upstream echoes: each echoed form whole, the
 * token's core in any case, and a middle slice of its base64 at each byte alignment (what a
 * base64 of a longer text that holds it contains).
 */
function giveaways(secret: string): string[] {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const slices = ['', 'x', 'xy'].map((p) => b64(p + secret).slice(4, 16));
  return [
    ...Object.values(echoedForms(secret)),
    ...slices,
    ...slices.map((s) => s.replace(/\+/g, '-').replace(/\//g, '_')),
  ];
}

function leaks(text: string, secret: string, core: string): string[] {
  const found = giveaways(secret).filter((g) => text.includes(g));
  if (text.toLowerCase().includes(core.toLowerCase())) found.push(`core ${core} (any case)`);
  return found;
}

/**
 * An upstream that echoes the secrets it is sent (the bearer token and the URL's `api_key`) in
 * every form and place it can: the connect's HTTP 500 body and status text, a 401's body and
 * challenge, a tools/call's JSON-RPC error, an `isError` result, an ordinary result, an HTTP 500
 * and a 401 on the call. Each role reaches it its own way: OWNER, WRITER and an AGENT signer by
 * the action API (ListMcpServers, RefreshMcpServer, InvokeTool, the event stream), an endpoint
 * client through the agent endpoint, the runtime over NATS. No form of either secret may appear in
 * a response, an event, a NATS message, a log line or a span; only the OWNER sees the query key,
 * in the server's URL.
 */
describe('secrets echoed by an upstream reach nobody', () => {
  const exporter = new InMemorySpanExporter();
  const logLines: string[] = [];
  const natsPayloads: string[] = [];
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let endpoint: RunningEndpoint;
  let nc: NatsConnection;
  let upstream: SecretEchoServer;
  /** A modern-era SDK server whose tools echo the same forms. */
  let modern: TestMcpServer;
  let owner: ApiClient;
  let writer: ApiClient;
  let agentSigner: ApiClient;
  let agentId: string;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-secrets-echo', spanExporter: exporter });
    const logSink = (line: string): void => void logLines.push(line);
    [system, upstream, modern] = await Promise.all([
      InProcessSystem.start({ telemetry, logSink, env: { LOG_LEVEL: 'debug' } }),
      startSecretEchoServer(),
      startTestMcpServer({
        era: 'modern',
        tools: modernEchoTools([TOKEN, QUERY_KEY]),
        requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` },
      }),
    ]);
    endpoint = await startEndpoint(
      loadEndpointConfig({ ...system.env, HTTP_PORT: '0', INSTANCE_ID: 'endpoint-secrets', LOG_LEVEL: 'debug' }),
      { telemetry, logSink },
    );
    nc = await connect({ servers: serviceUrls().nats });
    nc.subscribe(`${system.env.NATS_PREFIX}>`, {
      callback: (_e, msg) => void natsPayloads.push(Buffer.from(msg.data).toString('latin1')),
    });
    nc.subscribe('_INBOX.>', {
      callback: (_e, msg) => void natsPayloads.push(Buffer.from(msg.data).toString('latin1')),
    });

    owner = new ApiClient(system.apiUrl);
    const secretHeaders = { Authorization: `Bearer ${TOKEN}` };
    const query = `?api_key=${encodeURIComponent(QUERY_KEY)}`;
    for (const [name, mode] of [
      ['echo', 'ok'],
      ['c500', 'c500'],
      ['c401', 'c401'],
      ['hidden', 'ok'],
    ] as const) {
      await owner.act('SetMcpServer', { name, config: { url: upstream.url(mode, query), secretHeaders } });
    }
    const modernSet = await owner.act('SetMcpServer', {
      name: 'modern',
      config: { url: `${modern.url}${query}`, secretHeaders },
    });
    expect(modernSet.server.status).toMatchObject({ state: 'ok', era: 'modern' });
    const { agent } = await owner.act('CreateAgent', {
      name: 'bound',
      definition: { mcpServers: ['echo', 'c500', 'c401', 'modern'] },
    });
    agentId = agent.id;
    await owner.act('CreateAgent', { name: 'other', definition: { mcpServers: ['hidden'] } });
    const writerKey = generateKeyPair();
    const agentKey = generateKeyPair();
    await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' });
    await owner.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['bound'] });
    writer = new ApiClient(system.apiUrl, writerKey, owner.principal);
    agentSigner = new ApiClient(system.apiUrl, agentKey, owner.principal);
    await eventually(
      async () => ((await owner.act('ListAgentTools', { agent: agentId })).tools.length >= 9 ? true : undefined),
      20_000,
      'the echo tools projected',
    );
  }, 120_000);

  afterAll(async () => {
    await nc?.drain();
    await endpoint?.stop();
    await system?.stop();
    await upstream?.close();
    await modern?.close();
    await telemetry?.shutdown();
  });

  /** A call's answer or typed error, as its caller sees it. */
  const outcome = (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      (ok) => ({ ok }),
      (err: unknown) => ({ err: err instanceof Error ? { ...err, message: err.message } : err }),
    );

  /** Reads an account's event stream as the console does, for `signer`, until `stop` aborts. */
  function eventStream(api: ApiClient, stop: AbortSignal): { text: () => string; done: Promise<void> } {
    let text = '';
    const envelope = Buffer.from(JSON.stringify(api.envelope({ type: 'SubscribeEvents' }))).toString('base64url');
    const done = (async () => {
      try {
        const res = await fetch(`${system.apiUrl}/v1/events?envelope=${envelope}`, { signal: stop });
        const decoder = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk);
      } catch {
        // aborted
      }
    })();
    return { text: () => text, done };
  }

  it('no role, face, event, log line or span shows any form of the token or the query key', async () => {
    const stop = new AbortController();
    const streams = [
      eventStream(owner, stop.signal),
      eventStream(writer, stop.signal),
      eventStream(agentSigner, stop.signal),
    ];
    const byRole: Record<string, unknown[]> = { OWNER: [], WRITER: [], AGENT: [], endpoint: [], runtime: [] };

    // A failing connect echoes the next form at each attempt: each role sees every one in turn
    // (the OWNER and the WRITER refresh and list, the AGENT signer lists).
    for (let round = 0; round < FORM_NAMES.length; round++) {
      for (const [role, api] of [
        ['OWNER', owner],
        ['WRITER', writer],
      ] as const) {
        for (const name of ['c500', 'c401']) byRole[role]!.push(await outcome(api.act('RefreshMcpServer', { name })));
        byRole[role]!.push(await api.act('ListMcpServers'));
      }
      byRole.AGENT!.push(await agentSigner.act('ListMcpServers'));
    }
    // Each form echoed to each role through InvokeTool.
    for (const [i, [role, api]] of (
      [
        ['OWNER', owner],
        ['WRITER', writer],
        ['AGENT', agentSigner],
      ] as const
    ).entries()) {
      for (const call of callsOf(i))
        byRole[role]!.push(await outcome(api.act('InvokeTool', { agent: agentId, ...call })));
    }

    // An endpoint client: the agent's token, the MCP SDK's client.
    const { token } = await owner.act<{ token: string }>('CreateAgentToken', { agent: 'bound' });
    const client = new Client({ name: 'endpoint-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${endpoint.url}/v1/agents/bound/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    try {
      byRole.endpoint!.push(await client.listTools());
      for (const call of callsOf(3))
        byRole.endpoint!.push(await outcome(client.callTool({ name: call.tool, arguments: call.arguments })));
    } finally {
      await client.close();
    }

    // The agent runtime over NATS: every form through every tool.
    const runtime = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX ?? ''));
    for (const form of FORM_NAMES)
      for (const tool of TOOLS)
        byRole.runtime!.push(
          await outcome(
            runtime.call({ account: owner.principal, agent: agentId, run: 'echo-run', tool, arguments: { form } }),
          ),
        );
    // And every form at once, in a result.
    byRole.runtime!.push(
      await outcome(
        runtime.call({
          account: owner.principal,
          agent: agentId,
          run: 'echo-run',
          tool: 'echo__echo_result',
          arguments: {},
        }),
      ),
    );
    await runtime.endRun(owner.principal, 'echo-run');

    await nc.flush();
    await new Promise((r) => setTimeout(r, 300));
    stop.abort();
    await Promise.all(streams.map((s) => s.done));

    // The upstream did receive both secrets and echoed them (the attack ran).
    expect(upstream.received.authorization).toContain(`Bearer ${TOKEN}`);
    expect(upstream.received.apiKey).toContain(QUERY_KEY);
    expect(modern.stats.headersSeen.get('authorization')).toContain(`Bearer ${TOKEN}`);
    // Every form was echoed by each failing connect.
    expect(new Set(upstream.formsSent.c500)).toEqual(new Set(FORM_NAMES));
    expect(new Set(upstream.formsSent.c401)).toEqual(new Set(FORM_NAMES));
    const ownerServers = (
      byRole.OWNER![2] as { servers: Array<{ name: string; url: string; status: { state: string; error?: string } }> }
    ).servers;
    expect(ownerServers.find((s) => s.name === 'c500')?.status.error).toContain('HTTP 500');
    expect(ownerServers.find((s) => s.name === 'c500')?.status.error).toContain('[redacted]');
    // Only the OWNER sees the query key, in the URL it set.
    expect(ownerServers.find((s) => s.name === 'echo')?.url).toContain(QUERY_KEY);
    // An echoed result still arrives, with the secret cut out.
    expect(JSON.stringify(byRole.runtime!.at(-1))).toContain('[redacted]');
    expect(JSON.stringify(byRole.runtime!.at(-1))).toContain('base64OfHeaderLine=');
    // The modern server's echoes arrived too (its error and its result), scrubbed.
    const modernSeen = JSON.stringify(
      byRole.runtime!.filter((_o, i) => TOOLS[i % TOOLS.length]!.startsWith('modern__')),
    );
    expect(modernSeen).toContain('the server saw');
    expect(modernSeen).toContain('[redacted]');

    const ownerText = JSON.stringify(byRole.OWNER);
    const spans = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events, st: s.status })),
    );
    const places: Array<[string, string, boolean]> = [
      ['OWNER responses', ownerText, false],
      ['WRITER responses', JSON.stringify(byRole.WRITER), true],
      ['AGENT signer responses', JSON.stringify(byRole.AGENT), true],
      ['endpoint client', JSON.stringify(byRole.endpoint), true],
      ['NATS runtime', JSON.stringify(byRole.runtime), true],
      ...streams.map((s, i): [string, string, boolean] => [`event stream ${i}`, s.text(), true]),
      ['NATS messages', natsPayloads.join('\n'), true],
      ['log lines', logLines.join('\n'), true],
      ['spans', spans, true],
    ];
    const found: string[] = [];
    for (const [where, text, queryKeyToo] of places) {
      for (const f of leaks(text, TOKEN, '7c41d9e2b8')) found.push(`${where}: token as ${f}`);
      // The OWNER's view holds the query key in the URL it set, and nowhere else.
      const withoutOwnUrl = queryKeyToo ? text : text.split(encodeURIComponent(QUERY_KEY)).join('');
      for (const f of leaks(withoutOwnUrl, QUERY_KEY, '5e8a1f03c6')) found.push(`${where}: query key as ${f}`);
    }
    expect(found).toEqual([]);
    expect(logLines.length).toBeGreaterThan(0);
    expect(natsPayloads.length).toBeGreaterThan(0);
  }, 120_000);

  it('an AGENT signer lists only the servers of the agents it is bound to; only the OWNER sees the URL query', async () => {
    const names = async (api: ApiClient): Promise<string[]> =>
      ((await api.act('ListMcpServers')).servers as Array<{ name: string }>).map((s) => s.name).sort();
    expect(await names(owner)).toEqual(['c401', 'c500', 'echo', 'hidden', 'modern']);
    expect(await names(writer)).toEqual(['c401', 'c500', 'echo', 'hidden', 'modern']);
    expect(await names(agentSigner)).toEqual(['c401', 'c500', 'echo', 'modern']);
    const urlOf = async (api: ApiClient): Promise<string> =>
      ((await api.act('ListMcpServers')).servers as Array<{ name: string; url: string }>).find(
        (s) => s.name === 'echo',
      )!.url;
    expect(await urlOf(owner)).toBe(upstream.url('ok', `?api_key=${QUERY_KEY}`));
    expect(await urlOf(writer)).toBe(upstream.url('ok', '?api_key=[redacted]'));
    expect(await urlOf(agentSigner)).toBe(upstream.url('ok', '?api_key=[redacted]'));
  });

  it('a WRITER that saves the URL it was shown keeps the stored query key', async () => {
    const shown = upstream.url('ok', '?api_key=[redacted]');
    const before = upstream.received.apiKey.length;
    const saved = await writer.act('SetMcpServer', {
      name: 'hidden',
      config: { url: shown, secretRefs: { Authorization: 'mcp-hidden-authorization' } },
    });
    expect(saved.server.url).toBe(shown);
    expect(saved.server.status.state).toBe('ok');
    // The discovery after the save sent the stored key, not the redacted text.
    expect(upstream.received.apiKey.slice(before)).toContain(QUERY_KEY);
    expect(upstream.received.apiKey.slice(before)).not.toContain('[redacted]');
    const ownerView = ((await owner.act('ListMcpServers')).servers as Array<{ name: string; url: string }>).find(
      (s) => s.name === 'hidden',
    );
    expect(ownerView?.url).toBe(upstream.url('ok', `?api_key=${QUERY_KEY}`));
  });
});
