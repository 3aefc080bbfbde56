import { connect, type NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import { makeSubjects } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { ProxyClient } from '@mcpx/proxy-client';
import { startRegistry, type RunningRegistry } from '@mcpx/registry';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import {
  startOAuthServer,
  startProtectedMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { httpsGet, startTlsFront, type TlsFront } from '../servers/tls-front.js';
import { ApiClient } from '../support/api-client.js';
import { createProjectedAgent } from '../support/fixtures/agents.js';
import { serviceUrls } from '../support/env.js';
import { recordingAct } from '../support/leak-recorders.js';
import { TestBrowser } from '../support/oauth-browser.js';
import { InProcessSystem } from '../support/system.js';

const DOCUMENT_PATH = '/v1/oauth/client-metadata.json';

/**
 * OAuth client ID metadata documents, end to end: a registry whose public URL is an https TLS
 * front (as an operator deploys it) offers its document URL as the client id to an authorization
 * server that advertises support; that server fetches the document over loopback and checks it.
 * The in-process system's own registry has only a plain-http URL: it registers dynamically.
 */
describe('OAuth with a client ID metadata document', () => {
  const logLines: string[] = [];
  const responses: string[] = [];
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let front: TlsFront;
  let registry: RunningRegistry;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let nc: NatsConnection;
  let documentUrl: string;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-oauth-cimd', spanExporter: new InMemorySpanExporter() });
    front = await startTlsFront();
    as = await startOAuthServer({ clientIdMetadataDocuments: { ca: front.ca } });
    upstream = await startProtectedMcpServer(as);
    const logSink = (line: string): void => void logLines.push(line);
    system = await InProcessSystem.start({ telemetry, logSink });
    const config = loadConfig('registry', { ...system.env, HTTP_PORT: '0', INSTANCE_ID: 'registry-behind-tls' });
    registry = await startRegistry(config, { telemetry, logSink, publicUrl: front.origin });
    front.target = registry.url;
    documentUrl = `${front.origin}${DOCUMENT_PATH}`;
    nc = await connect({ servers: serviceUrls().nats });
  });

  afterAll(async () => {
    await nc?.drain();
    await registry?.stop();
    await system?.stop();
    await upstream?.close();
    await as?.close();
    await front?.close();
    await telemetry?.shutdown();
  });

  const act = recordingAct(responses);

  /** The owner's browser (it trusts the front's certificate): it holds the tickets' binding cookies. */
  let browser: TestBrowser;
  /** Opens a ticket in the owner's browser: the authorization server's URL it leads to. */
  const authorizationUrl = (ticketUrl: string): Promise<URL> =>
    (browser ??= new TestBrowser({ ca: front.ca })).start(ticketUrl);

  /** The browser: the AS approves and redirects to the registry's https callback, which is then opened. */
  async function authorizeInBrowser(authorizationUrl: URL): Promise<{ status: number; text: string }> {
    const asRes = await browser.request(authorizationUrl);
    const location = asRes.location;
    if (asRes.status !== 302 || location === null) {
      responses.push(asRes.text);
      return { status: asRes.status, text: asRes.text };
    }
    expect(location.startsWith(`${front.origin}/v1/oauth/callback?`)).toBe(true);
    const page = await browser.open(location);
    responses.push(page.text);
    return page;
  }

  async function oauthRows(account: string): Promise<Array<{ client_sealed: unknown; tokens_sealed: unknown }>> {
    const db = createDb(system.env.DATABASE_URL!, { max: 1 });
    try {
      return await db
        .selectFrom('registry.oauth_connections')
        .select(['client_sealed', 'tokens_sealed'])
        .where('account_id', '=', account)
        .execute();
    } finally {
      await db.destroy();
    }
  }

  it('serves the document at its own public URL: JSON, cacheable, client_id equal to that URL', async () => {
    const res = await httpsGet(documentUrl, { ca: front.ca });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    expect(JSON.parse(res.text)).toEqual({
      client_id: documentUrl,
      client_name: 'mcp-connector',
      redirect_uris: [`${front.origin}/v1/oauth/callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const etag = String(res.headers.etag);
    expect((await httpsGet(documentUrl, { ca: front.ca, headers: { 'if-none-match': etag } })).status).toBe(304);
    // Reached directly, it still names the public URL (the one authorization servers fetch).
    const direct = await fetch(`${registry.url}${DOCUMENT_PATH}`);
    expect(((await direct.json()) as { client_id: string }).client_id).toBe(documentUrl);
    expect((await fetch(`${registry.url}${DOCUMENT_PATH}`, { method: 'POST' })).status).toBe(404);
  });

  it('uses the document URL as client id: no registration, the AS fetched the document, tokens stored, the server is ok', async () => {
    const before = { registrations: as.stats.registrations, fetches: as.stats.metadataDocumentFetches };
    const api = new ApiClient(registry.url);
    const set = await act(api, 'SetMcpServer', { name: 'cimd', config: { url: upstream.url, auth: 'oauth' } });
    expect(set.server.status.state).toBe('auth_required');
    expect(set.authorizationUrl.startsWith(`${front.origin}/v1/oauth/start?ticket=`)).toBe(true);
    const authUrl = await authorizationUrl(set.authorizationUrl);
    expect(authUrl.searchParams.get('client_id')).toBe(documentUrl);
    expect(authUrl.searchParams.get('redirect_uri')).toBe(`${front.origin}/v1/oauth/callback`);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(upstream.url);
    expect(as.stats.registrations).toBe(before.registrations);

    const page = await authorizeInBrowser(authUrl);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Connected to cimd');
    // Fetched at /authorize and again at /token (this AS does not cache), never refused.
    expect(as.stats.metadataDocumentFetches - before.fetches).toBe(2);
    expect(as.stats.metadataDocumentRefusals).toEqual([]);
    expect(as.stats.registrations).toBe(before.registrations);
    const rows = await oauthRows(api.principal);
    expect(rows.length).toBe(1);
    expect(rows[0]!.tokens_sealed).not.toBeNull();

    const { servers } = await act(api, 'ListMcpServers');
    const cimd = servers.find((s: { name: string }) => s.name === 'cimd');
    expect(cimd.status.state).toBe('ok');
    expect(cimd.tools.map((t: { name: string }) => t.name).sort()).toEqual(['add', 'echo']);
    expect(logLines.some((l) => l.includes('oauth client ready') && l.includes('metadata_document'))).toBe(true);

    // The proxy calls with the token issued to the document's client.
    const agentId = await createProjectedAgent(api, 'cimd-runner', ['cimd'], 2, act);
    const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
    const outcome = await proxy.call({
      account: api.principal,
      agent: agentId,
      run: 'cimd-run',
      tool: 'cimd__echo',
      arguments: { text: 'by document' },
    });
    responses.push(JSON.stringify(outcome));
    expect(outcome.result.text).toBe('echo: by document');
    await proxy.endRun(api.principal, 'cimd-run');
  });

  it('a pre-registered client wins over the document', async () => {
    const fetches = as.stats.metadataDocumentFetches;
    as.provider.registered.set('pre-cimd', {
      client_id: 'pre-cimd',
      redirect_uris: [`${front.origin}/v1/oauth/callback`],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    const api = new ApiClient(registry.url);
    const set = await act(api, 'SetMcpServer', {
      name: 'precimd',
      config: { url: upstream.url, auth: 'oauth', oauth: { clientId: 'pre-cimd' } },
    });
    const authUrl = await authorizationUrl(set.authorizationUrl);
    expect(authUrl.searchParams.get('client_id')).toBe('pre-cimd');
    expect((await authorizeInBrowser(authUrl)).text).toContain('Connected to precimd');
    expect(as.stats.metadataDocumentFetches).toBe(fetches);
  });

  it('a registry without an https public URL registers dynamically, and says why', async () => {
    const before = { registrations: as.stats.registrations, fetches: as.stats.metadataDocumentFetches };
    const api = new ApiClient(system.apiUrl);
    const set = await act(api, 'SetMcpServer', { name: 'plainurl', config: { url: upstream.url, auth: 'oauth' } });
    expect(set.server.status.state).toBe('auth_required');
    const plainBrowser = new TestBrowser();
    const plainUrl = await plainBrowser.start(set.authorizationUrl);
    const clientId = plainUrl.searchParams.get('client_id') ?? '';
    expect(clientId).not.toMatch(/^https?:/);
    expect(as.stats.registrations).toBe(before.registrations + 1);
    expect(
      logLines.some((l) =>
        l.includes('registered dynamically although the authorization server accepts client ID metadata documents'),
      ),
    ).toBe(true);
    expect(set.authorizationUrl.startsWith(`${system.apiUrl}/v1/oauth/start?ticket=`)).toBe(true);
    expect((await plainBrowser.open(plainUrl)).text).toContain('Connected to plainurl');
    expect(as.stats.metadataDocumentFetches).toBe(before.fetches);
  });

  it('the AS checks the document for real: a client_id that is not the URL, an http URL, an unlisted redirect_uri are refused', async () => {
    const api = new ApiClient(registry.url);
    const set = await act(api, 'SetMcpServer', { name: 'probed', config: { url: upstream.url, auth: 'oauth' } });
    const refusals = as.stats.metadataDocumentRefusals.length;
    const asked = await authorizationUrl(set.authorizationUrl);
    const variant = async (param: string, value: string): Promise<{ status: number; body: string }> => {
      const url = new URL(asked);
      url.searchParams.set(param, value);
      const res = await fetch(url, { redirect: 'manual' });
      return { status: res.status, body: await res.text() };
    };
    const mismatched = await variant('client_id', `${documentUrl}?v=2`);
    expect(mismatched.status).toBe(400);
    expect(mismatched.body).toContain('client_id does not match the URL');
    const plain = await variant('client_id', `${registry.url}${DOCUMENT_PATH}`);
    expect(plain.status).toBe(400);
    expect(plain.body).toContain('https URL with a path');
    const elsewhere = await variant('redirect_uri', `${front.origin}/elsewhere`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body).toContain('Unregistered redirect_uri');
    expect(as.stats.metadataDocumentRefusals.length).toBe(refusals + 2);
    const rows = await oauthRows(api.principal);
    expect(rows.every((r) => r.tokens_sealed === null)).toBe(true);
  });

  it('an AS that cannot fetch the document refuses the client; a failed exchange stores no tokens and leaks nothing', async () => {
    // An AS that does not trust the front's certificate cannot fetch the document.
    const blind = await startOAuthServer({ clientIdMetadataDocuments: {} });
    const guarded = await startProtectedMcpServer(blind);
    const api = new ApiClient(registry.url);
    try {
      const set = await act(api, 'SetMcpServer', { name: 'unfetched', config: { url: guarded.url, auth: 'oauth' } });
      const asked = await authorizationUrl(set.authorizationUrl);
      expect(asked.searchParams.get('client_id')).toBe(documentUrl);
      const refused = await authorizeInBrowser(asked);
      expect(refused.status).toBe(400);
      expect(refused.text).toContain('client metadata document could not be fetched');
      expect(blind.stats.codeExchanges).toBe(0);
      expect((await oauthRows(api.principal)).every((r) => r.tokens_sealed === null)).toBe(true);
    } finally {
      await guarded.close();
      await blind.close();
    }

    // The real state with a code the AS never issued: the exchange fails, nothing is stored.
    const again = await act(api, 'SetMcpServer', { name: 'badcode', config: { url: upstream.url, auth: 'oauth' } });
    const state = (await authorizationUrl(again.authorizationUrl)).searchParams.get('state') ?? '';
    // With the right `iss` (RFC 9207), so that the code is presented and refused by the AS; from the browser that opened the ticket.
    const page = await browser.open(
      `${front.origin}/v1/oauth/callback?code=never-issued&state=${encodeURIComponent(state)}&iss=${encodeURIComponent(as.issuer)}`,
    );
    responses.push(page.text);
    expect(page.status).toBe(502);
    expect(page.text).toContain('could not complete the exchange');
    const { servers } = await act(api, 'ListMcpServers');
    expect(servers.find((s: { name: string }) => s.name === 'badcode').status.state).toBe('auth_required');
    expect((await oauthRows(api.principal)).every((r) => r.tokens_sealed === null)).toBe(true);
  });

  it('no token ever appears in a response, a page or a log line', () => {
    const secrets = as.issuedTokens();
    expect(secrets.length).toBeGreaterThan(2);
    const text = [...responses, ...logLines].join('\n');
    for (const secret of secrets) expect(text.includes(secret)).toBe(false);
  });
});
