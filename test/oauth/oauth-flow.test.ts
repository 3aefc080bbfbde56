import type { NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { startProtectedMcpServer, type TestMcpServer, type TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { connectOAuthServer, createProjectedAgent } from '../support/fixtures/agents.js';
import { recordWire, recordingAct } from '../support/leak-recorders.js';
import { TestBrowser } from '../support/oauth-browser.js';
import type { OAuthSystem } from '../support/oauth-system.js';
import type { InProcessSystem } from '../support/system.js';
import { natsPerSuite, oauthSystemPerSuite } from '../support/fixtures/suites.js';

/**
 * OAuth 2.1 against a real authorization server (the SDK's server-side auth pieces) and a
 * protected MCP server that accepts only the tokens that server issued, driven the way an owner
 * does: SetMcpServer, open the ticket URL it returns in a browser (the registry sets the binding
 * cookie and redirects to the authorization server, which auto-approves and redirects to the
 * registry's callback), then call a tool through the proxy. Once against a legacy protected
 * server (SDK v1, 2025-11-25) and once against a modern one (SDK v2, `legacy: 'reject'`).
 */
describe.each(['legacy', 'modern'] as const)('OAuth for remote servers (%s protected server)', (era) => {
  const exporter = new InMemorySpanExporter();
  const logLines: string[] = [];
  const natsPayloads: string[] = [];
  const responses: string[] = [];
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let nc: NatsConnection;

  oauthSystemPerSuite(
    {
      serviceName: `mcpx-oauth-test-${era}`,
      era,
      spanExporter: exporter,
      logSink: (line) => logLines.push(line),
      env: { LOG_LEVEL: 'debug' },
    },
    (o) => ({ system, as, upstream } = o),
  );
  natsPerSuite((c) => (nc = c));

  beforeAll(async () => {
    recordWire(nc, system.env.NATS_PREFIX ?? '', natsPayloads);
  });

  const act = recordingAct(responses);

  /**
   * Opens a URL in `browser` (a fresh one by default) as a browser would: a ticket sets the
   * binding cookie and leads to the AS, which approves and redirects to the callback.
   */
  async function openInBrowser(url: string, browser = new TestBrowser()): Promise<{ status: number; text: string }> {
    const { status, text } = await browser.open(url);
    responses.push(text);
    return { status, text };
  }

  it('SetMcpServer → auth_required with an authorization URL → callback → ok, tools listed, a call through the proxy carries the token', async () => {
    const api = new ApiClient(system.apiUrl);
    const set = await act(api, 'SetMcpServer', { name: 'guarded', config: { url: upstream.url, auth: 'oauth' } });
    expect(set.server.status.state).toBe('auth_required');
    expect(set.authorizationUrl).toMatch(new RegExp(`^${system.apiUrl}/v1/oauth/start\\?ticket=[A-Za-z0-9_-]{43}$`));
    expect(set.server.status).not.toHaveProperty('authorizationUrl');
    const browser = new TestBrowser();
    const authUrl = await browser.start(set.authorizationUrl);
    expect(authUrl.origin + '/').toBe(as.issuer);
    expect(authUrl.pathname).toBe('/authorize');
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authUrl.searchParams.get('resource')).toBe(upstream.url);
    expect(authUrl.searchParams.get('redirect_uri')).toBe(`${system.apiUrl}/v1/oauth/callback`);
    expect(authUrl.searchParams.get('state')?.length).toBeGreaterThanOrEqual(32);
    expect(as.stats.registrations).toBe(1); // dynamic client registration, no client id configured

    const page = await openInBrowser(authUrl.href, browser);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Connected to guarded');
    expect(browser.cookieCount(new URL(system.apiUrl).origin)).toBe(0); // the binding cookie went with the callback
    expect(as.stats.codeExchanges).toBe(1);
    expect(as.stats.authorizeResources).toEqual([upstream.url]);

    const { servers } = await act(api, 'ListMcpServers');
    const guarded = servers.find((s: { name: string }) => s.name === 'guarded');
    expect(guarded.status.state).toBe('ok');
    expect(guarded.tools.map((t: { name: string }) => t.name).sort()).toEqual(['add', 'echo']);

    const agentId = await createProjectedAgent(api, 'oauth-runner', ['guarded'], 2, act);
    const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
    const refusedBefore = as.stats.refused;
    const outcome = await proxy.call({
      account: api.principal,
      agent: agentId,
      run: 'oauth-run',
      tool: 'guarded__echo',
      arguments: { text: 'with a token' },
    });
    responses.push(JSON.stringify(outcome));
    expect(outcome.result.text).toBe('echo: with a token');
    expect(as.stats.refused).toBe(refusedBefore);
    await proxy.endRun(api.principal, 'oauth-run');
    expect(upstream.stats.headersSeen.get('authorization')?.at(-1)).toMatch(/^Bearer at_/);
  });

  it('an abandoned authorization costs nothing and is resumed with a fresh URL (only the newest completes)', async () => {
    const api = new ApiClient(system.apiUrl);
    const first = await act(api, 'SetMcpServer', { name: 'later', config: { url: upstream.url, auth: 'oauth' } });
    expect(first.server.status.state).toBe('auth_required');
    const refreshed = await act(api, 'RefreshMcpServer', { name: 'later' });
    expect(refreshed.server.status.state).toBe('auth_required');
    expect(refreshed.authorizationUrl).toBeDefined();
    const fresh = await act(api, 'AuthorizeMcpServer', { name: 'later' });
    expect(fresh.authorizationUrl).toBeDefined();
    const tickets = [first, refreshed, fresh].map((r) =>
      new URL(r.authorizationUrl as string).searchParams.get('ticket'),
    );
    expect(new Set(tickets).size).toBe(3);

    const page = await openInBrowser(fresh.authorizationUrl);
    expect(page.text).toContain('Connected to later');
    // The first ticket's authorization was replaced: it opens nothing, no cookie, no AS.
    const stale = await openInBrowser(first.authorizationUrl);
    expect(stale.status).toBe(400);
    expect(stale.text).toContain('A newer authorization of this server replaced this one');
    const { servers } = await act(api, 'ListMcpServers');
    expect(servers.find((s: { name: string }) => s.name === 'later').status.state).toBe('ok');
  });

  it('a forged or unknown state is refused with a clear error and nothing is stored; a replayed callback too', async () => {
    const api = new ApiClient(system.apiUrl);
    const set = await act(api, 'SetMcpServer', { name: 'forged', config: { url: upstream.url, auth: 'oauth' } });
    const exchanges = as.stats.codeExchanges;
    const forged = await openInBrowser(`${system.apiUrl}/v1/oauth/callback?code=stolen&state=${'A'.repeat(43)}`);
    expect(forged.status).toBe(400);
    expect(forged.text).toContain('Authorization not started in this browser');
    const missing = await openInBrowser(`${system.apiUrl}/v1/oauth/callback?code=x`);
    expect(missing.status).toBe(400);
    expect(as.stats.codeExchanges).toBe(exchanges);
    const { servers } = await act(api, 'ListMcpServers');
    expect(servers.find((s: { name: string }) => s.name === 'forged').status.state).toBe('auth_required');

    // The real state, but the browser lands twice (a replay): the second is refused.
    const browser = new TestBrowser();
    const callback = (await browser.authorizationResponse(await browser.start(set.authorizationUrl))).href;
    expect(callback.startsWith(`${system.apiUrl}/v1/oauth/callback?`)).toBe(true);
    expect((await openInBrowser(callback, browser)).status).toBe(200);
    const replay = await openInBrowser(callback, browser);
    expect(replay.status).toBe(400);
  });

  it('refreshes on a 401 (rotating the refresh token once); a failed refresh is auth_required with a new URL', async () => {
    const api = new ApiClient(system.apiUrl);
    const set = await act(api, 'SetMcpServer', { name: 'rotating', config: { url: upstream.url, auth: 'oauth' } });
    await openInBrowser(set.authorizationUrl);
    const refreshes = as.stats.refreshes;
    as.provider.expireAccessTokens();
    const again = await act(api, 'RefreshMcpServer', { name: 'rotating' });
    expect(again.server.status.state, JSON.stringify(again.server.status)).toBe('ok');
    expect(again.authorizationUrl).toBeUndefined();
    expect(as.stats.refreshes).toBe(refreshes + 1);
    expect(as.stats.refreshReplays).toBe(0);

    as.provider.expireAccessTokens();
    as.provider.revokeRefreshTokens();
    const lost = await act(api, 'RefreshMcpServer', { name: 'rotating' });
    expect(lost.server.status.state).toBe('auth_required');
    expect(lost.authorizationUrl).toBeDefined();
    expect((await openInBrowser(lost.authorizationUrl)).text).toContain('Connected to rotating');
  });

  it('tokens stay with the URL they were issued for: a server moved to another URL authorizes again', async () => {
    const api = new ApiClient(system.apiUrl);
    const set = await act(api, 'SetMcpServer', { name: 'moving', config: { url: upstream.url, auth: 'oauth' } });
    expect((await openInBrowser(set.authorizationUrl)).text).toContain('Connected to moving');
    const elsewhere = await startProtectedMcpServer(as);
    try {
      const moved = await act(api, 'SetMcpServer', { name: 'moving', config: { url: elsewhere.url, auth: 'oauth' } });
      expect(moved.server.status.state).toBe('auth_required');
      expect((await new TestBrowser().start(moved.authorizationUrl as string)).searchParams.get('resource')).toBe(
        elsewhere.url,
      );
      expect(elsewhere.stats.headersSeen.get('authorization') ?? []).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });

  it('config.auth is validated', async () => {
    const api = new ApiClient(system.apiUrl);
    await expect(
      api.act('SetMcpServer', { name: 'bad', config: { url: upstream.url, auth: 'magic' } }),
    ).rejects.toThrow(/config\.auth/);
    await act(api, 'SetMcpServer', { name: 'plainone', config: { url: upstream.url } });
    await expect(api.act('AuthorizeMcpServer', { name: 'plainone' })).rejects.toThrow(/does not use OAuth/);
  });

  it('client secrets and tokens never appear in a response, a log line, a NATS message or a span', async () => {
    const secrets = [...as.clients().map((c) => c.client_secret ?? ''), ...as.issuedTokens()].filter(
      (s) => s.length > 0,
    );
    expect(secrets.length).toBeGreaterThan(2);
    const spanText = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events, st: s.status })),
    );
    // The registry's OAuth exchanges are spans of their own (and these are among the ones searched).
    const names = new Set(exporter.getFinishedSpans().map((s) => s.name));
    for (const op of ['ensure', 'code_exchange', 'start']) expect(names.has(`registry.oauth ${op}`), op).toBe(true);
    for (const [where, text] of [
      ['responses', responses.join('\n')],
      ['logs', logLines.join('\n')],
      ['nats', natsPayloads.join('\n')],
      ['spans', spanText],
    ] as const) {
      expect(text.length, where).toBeGreaterThan(0);
      for (const secret of secrets) expect(text.includes(secret), `${where} holds a secret`).toBe(false);
    }
  });
});

/**
 * Two registry instances (one database, one Redis namespace) need a fresh token at the same
 * moment: the rotating refresh token is presented once, both end up `ok`. (Through the API the
 * per-server discovery lock already serialises them; the OAuth lock underneath guards the same
 * token for callers outside discovery.)
 */
describe('OAuth refresh across instances', () => {
  let oauth: OAuthSystem;
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let second: { url: string; stop(): Promise<void> };

  // Tokens live 30 s, inside the 60 s refresh window: every use refreshes first.
  oauthSystemPerSuite(
    { serviceName: 'mcpx-oauth-race', authorizationServer: { accessTokenTtlSec: 30 } },
    (o) => ({ oauth, system, as, upstream } = o),
  );

  beforeAll(async () => {
    const { loadConfig } = await import('@mcpx/config');
    const { startRegistry } = await import('@mcpx/registry');
    second = await startRegistry(
      loadConfig('registry', { ...system.env, HTTP_PORT: '0', INSTANCE_ID: 'registry-second' }),
      { telemetry: oauth.telemetry },
    );
  });

  afterAll(async () => {
    await second?.stop();
  });

  it('refreshes a token about to expire before using it, and never twice with one refresh token when two instances race', async () => {
    const api = new ApiClient(system.apiUrl);
    await connectOAuthServer(api, 'raced', upstream.url);
    const before = as.stats.refreshes;
    const other = new ApiClient(second.url, api.key);
    const results = await Promise.all([
      api.act('RefreshMcpServer', { name: 'raced' }),
      other.act('RefreshMcpServer', { name: 'raced' }),
    ]);
    for (const r of results) expect(r.server.status.state).toBe('ok');
    expect(as.stats.refreshes).toBeGreaterThan(before);
    expect(as.stats.refreshReplays).toBe(0);
    expect(as.stats.refused).toBe(0);
  });
});
