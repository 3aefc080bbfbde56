import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  startMovableProtectedMcpServer,
  startOAuthServer,
  startProtectedMcpServer,
  type TestOAuthServer,
} from '../servers/oauth-server.js';
import type { TestMcpServer } from '../servers/mcp-test-server.js';
import { ApiClient } from '../support/api-client.js';
import { recordingAct } from '../support/leak-recorders.js';
import { TestBrowser } from '../support/oauth-browser.js';
import type { InProcessSystem } from '../support/system.js';
import { oauthSystemPerSuite } from '../support/fixtures/suites.js';

/**
 * The authorization requirements of MCP 2026-07-28, through the registry as an owner drives it,
 * against real authorization servers on loopback: RFC 9207 `iss` checked before a code is
 * redeemed (mix-up attacks refused), `application_type` in dynamic registration, credentials
 * bound to the authorization server that issued them (a server that moves to another one gets a
 * client registered there and nothing of the first presented to it). Against a legacy protected
 * server (SDK v1) and a modern one (SDK v2, `legacy: 'reject'`); the authorization servers are
 * the SDK v1 router's (SDK v2 has none).
 */
describe.each(['legacy', 'modern'] as const)('OAuth of 2026-07-28 (%s protected server)', (era) => {
  const responses: string[] = [];
  const exporter = new InMemorySpanExporter();
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let api: ApiClient;
  const act = recordingAct(responses);

  oauthSystemPerSuite(
    {
      serviceName: `mcpx-oauth-2026-${era}`,
      era,
      spanExporter: exporter,
      authorizationServer: { requireApplicationType: 'web' },
    },
    (o) => ({ system, as, upstream } = o),
  );

  beforeAll(async () => {
    api = new ApiClient(system.apiUrl);
  });

  /** The owner's browser: it opens the tickets, so it holds their binding cookies. */
  const browser = new TestBrowser();
  const protectedOpts = era === 'modern' ? { era: 'modern' as const } : {};

  /** Opens a ticket in the owner's browser: the authorization server's URL it leads to. */
  function authorizationUrl(ticketUrl: string): Promise<URL> {
    return browser.start(ticketUrl);
  }

  /** Opens a ticket; the authorization server's answer to the browser: the callback URL it redirects to. */
  async function authorizationResponse(ticketUrl: string): Promise<URL> {
    return browser.authorizationResponse(await authorizationUrl(ticketUrl));
  }

  async function open(url: URL | string): Promise<{ status: number; text: string }> {
    const { status, text } = await browser.open(url);
    responses.push(text);
    return { status, text };
  }

  async function state(name: string): Promise<string> {
    const { servers } = await act(api, 'ListMcpServers');
    return servers.find((s: { name: string }) => s.name === name).status.state;
  }

  it('registers as a web application and completes an authorization whose response carries the right iss', async () => {
    const set = await act(api, 'SetMcpServer', { name: 'iss-ok', config: { url: upstream.url, auth: 'oauth' } });
    expect(set.server.status.state).toBe('auth_required');
    // The authorization server refuses any other application_type: this registration passed.
    expect(as.stats.registrationApplicationTypes).toEqual(['web']);
    const callback = await authorizationResponse(set.authorizationUrl);
    expect(callback.searchParams.get('iss')).toBe(as.issuer);
    const page = await open(callback);
    expect(page.text).toContain('Connected to iss-ok');
    expect(await state('iss-ok')).toBe('ok');
  });

  it('a mix-up (a response naming another issuer) is refused before the code is redeemed, and nothing is stored', async () => {
    const set = await act(api, 'SetMcpServer', { name: 'mixed-up', config: { url: upstream.url, auth: 'oauth' } });
    const exchanges = as.stats.codeExchanges;
    const callback = await authorizationResponse(set.authorizationUrl);
    const forged = new URL(callback);
    forged.searchParams.set('iss', 'http://127.0.0.1:1/');
    const page = await open(forged);
    expect(page.status).toBe(400);
    expect(page.text).toContain('does not come from the authorization server');
    expect(page.text).not.toContain('127.0.0.1:1');
    expect(as.stats.codeExchanges).toBe(exchanges);
    expect(await state('mixed-up')).toBe('auth_required');
    // The refused response used up its state: the genuine one cannot complete it afterwards.
    expect((await open(callback)).status).toBe(400);
    expect(as.stats.codeExchanges).toBe(exchanges);
  });

  it('a response without iss from a server that advertises it is refused (a stripped parameter), no code redeemed', async () => {
    const set = await act(api, 'SetMcpServer', { name: 'stripped', config: { url: upstream.url, auth: 'oauth' } });
    const exchanges = as.stats.codeExchanges;
    const callback = await authorizationResponse(set.authorizationUrl);
    callback.searchParams.delete('iss');
    const page = await open(callback);
    expect(page.status).toBe(400);
    expect(page.text).toContain('does not come from the authorization server');
    expect(as.stats.codeExchanges).toBe(exchanges);
    expect(await state('stripped')).toBe('auth_required');
  });

  it('an error response is shown only when its iss checks out, and then only as its registered code', async () => {
    const evil = 'Call +1-555-0100 to restore your account';
    const first = await act(api, 'SetMcpServer', { name: 'denied', config: { url: upstream.url, auth: 'oauth' } });
    const s1 = (await authorizationUrl(first.authorizationUrl)).searchParams.get('state')!;
    const forged = new URL(`${system.apiUrl}/v1/oauth/callback`);
    for (const [k, v] of Object.entries({
      error: 'access_denied',
      error_description: evil,
      state: s1,
      iss: 'http://127.0.0.1:1/',
    }))
      forged.searchParams.set(k, v);
    const refused = await open(forged);
    expect(refused.status).toBe(400);
    expect(refused.text).not.toContain('access_denied');
    expect(refused.text).not.toContain(evil);
    expect(refused.text).toContain('does not come from the authorization server');

    const again = await act(api, 'AuthorizeMcpServer', { name: 'denied' });
    const s2 = (await authorizationUrl(again.authorizationUrl)).searchParams.get('state')!;
    const genuine = new URL(`${system.apiUrl}/v1/oauth/callback`);
    for (const [k, v] of Object.entries({ error: 'access_denied', error_description: evil, state: s2, iss: as.issuer }))
      genuine.searchParams.set(k, v);
    const shown = await open(genuine);
    expect(shown.status).toBe(400);
    expect(shown.text).toContain('access_denied');
    expect(shown.text).not.toContain(evil);
    // The refused authorization is over: its state completes nothing any more (its binding went with it).
    expect((await open(genuine)).text).toContain('Authorization not started in this browser');
    // Each error response is a span of its own, saying whether its issuer checked out.
    const outcomes = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'registry.oauth error_response' && s.attributes['mcp.server'] === 'denied')
      .map((s) => s.attributes['mcpx.oauth.outcome']);
    expect(outcomes).toEqual(['issuer_mismatch', 'refused']);
  });

  it('an authorization server that does not advertise iss completes without one', async () => {
    await using older = await startOAuthServer({ issParameter: 'none' });
    const guarded = await startProtectedMcpServer(older, protectedOpts);
    try {
      const set = await act(api, 'SetMcpServer', { name: 'pre-9207', config: { url: guarded.url, auth: 'oauth' } });
      const callback = await authorizationResponse(set.authorizationUrl);
      expect(callback.searchParams.has('iss')).toBe(false);
      expect((await open(callback)).text).toContain('Connected to pre-9207');
    } finally {
      await guarded.close();
    }
  });

  it('a server that moves to another authorization server gets a client registered there; nothing of the first is presented to it', async () => {
    await using first = await startOAuthServer();
    await using second = await startOAuthServer();
    const movable = await startMovableProtectedMcpServer(first, protectedOpts);
    try {
      const set = await act(api, 'SetMcpServer', {
        name: 'migrating',
        config: { url: movable.server.url, auth: 'oauth' },
      });
      const firstUrl = await authorizationUrl(set.authorizationUrl);
      expect(firstUrl.origin + '/').toBe(first.issuer);
      expect((await open(await browser.authorizationResponse(firstUrl))).text).toContain('Connected to migrating');
      const firstClient = first.clients()[0]!.client_id;
      const firstRefreshes = first.stats.refreshes;

      movable.moveTo(second);
      const moved = await act(api, 'RefreshMcpServer', { name: 'migrating' });
      expect(moved.server.status.state).toBe('auth_required');
      const url = await authorizationUrl(moved.authorizationUrl);
      expect(url.origin + '/').toBe(second.issuer);
      // Registered with the new authorization server, under a client id of its own.
      expect(second.stats.registrations).toBe(1);
      expect(url.searchParams.get('client_id')).toBe(second.clients()[0]!.client_id);
      expect(url.searchParams.get('client_id')).not.toBe(firstClient);
      // The first server's refresh token was not used to get a token the server no longer takes.
      expect(first.stats.refreshes).toBe(firstRefreshes);
      expect(second.stats.refreshes + second.stats.refreshReplays).toBe(0);

      const callback = await browser.authorizationResponse(url);
      expect(callback.searchParams.get('iss')).toBe(second.issuer);
      expect((await open(callback)).text).toContain('Connected to migrating');
      expect(await state('migrating')).toBe('ok');
    } finally {
      await movable.server.close();
    }
  });

  it('no client secret or token in any response', () => {
    const secrets = [as]
      .flatMap((s) => [...s.clients().map((c) => c.client_secret ?? ''), ...s.issuedTokens()])
      .filter((s) => s.length > 0);
    expect(secrets.length).toBeGreaterThan(0);
    const text = responses.join('\n');
    for (const secret of secrets) expect(text.includes(secret)).toBe(false);
  });
});
