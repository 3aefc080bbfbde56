import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import { WireError, makeSubjects } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { startProxy, type RunningProxy } from '@mcpx/proxy';
import { ProxyClient } from '@mcpx/proxy-client';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import {
  startOAuthServer,
  startProtectedMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { createProjectedAgent } from '../support/fixtures/agents.js';
import { serviceUrls } from '../support/env.js';
import { recordWire, recordingAct } from '../support/leak-recorders.js';
import { InProcessSystem } from '../support/system.js';

/** An EC P-256 key pair; the private half as the PEM PKCS#8 text an owner pastes. */
function es256Key(): { pem: string; publicKey: KeyObject; privateKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey, privateKey };
}

/** The base64 body of a PEM: what would show if the key leaked in any shape. */
function pemBody(pem: string): string {
  return pem
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .join('')
    .slice(0, 48);
}

/** A client assertion signed by hand (for the authorization server's own checks). */
function assertion(key: KeyObject, claims: Record<string, unknown>, alg = 'ES256'): string {
  const enc = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const data = `${enc({ alg, typ: 'JWT' })}.${enc(claims)}`;
  return `${data}.${sign('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/**
 * Machine-to-machine OAuth: a pre-registered client with `grant: 'client_credentials'` gets its
 * tokens straight from the token endpoint (client_secret_basic / _post as the authorization
 * server advertises, or an RFC 7523 private_key_jwt assertion), nobody signs in. Against a real
 * authorization server that verifies the credentials and assertions, and a protected MCP server
 * that takes only its tokens; two proxies race on an expired token. Against a legacy protected
 * server (SDK v1) and a modern one (SDK v2, `legacy: 'reject'`).
 */
describe.each(['legacy', 'modern'] as const)('OAuth client credentials (%s protected server)', (era) => {
  const exporter = new InMemorySpanExporter();
  const logLines: string[] = [];
  const natsPayloads: string[] = [];
  const responses: string[] = [];
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let second: RunningProxy;
  let as: TestOAuthServer;
  let asPost: TestOAuthServer;
  let upstream: TestMcpServer;
  let upstreamPost: TestMcpServer;
  let nc: NatsConnection;
  let proxy: ProxyClient;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: `mcpx-oauth-cc-${era}`, spanExporter: exporter });
    as = await startOAuthServer({ clientCredentials: { authMethods: ['client_secret_basic', 'private_key_jwt'] } });
    asPost = await startOAuthServer({ clientCredentials: { authMethods: ['client_secret_post'] } });
    const protectedOpts = era === 'modern' ? { era: 'modern' as const } : {};
    upstream = await startProtectedMcpServer(as, protectedOpts);
    upstreamPost = await startProtectedMcpServer(asPost, protectedOpts);
    system = await InProcessSystem.start({
      telemetry,
      logSink: (line) => logLines.push(line),
      env: { LOG_LEVEL: 'debug' },
    });
    second = await startProxy(
      loadConfig('proxy', { ...system.env, HTTP_PORT: '0', INSTANCE_ID: `proxy-cc-second-${era}` }),
      { telemetry, logSink: (line) => logLines.push(line) },
    );
    nc = await connect({ servers: serviceUrls().nats });
    recordWire(nc, system.env.NATS_PREFIX ?? '', natsPayloads);
    proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
  });

  afterAll(async () => {
    await nc?.drain();
    await second?.stop();
    await system?.stop();
    await upstream?.close();
    await upstreamPost?.close();
    await as?.close();
    await asPost?.close();
    await telemetry?.shutdown();
  });

  const act = recordingAct(responses);

  /** Sets server `name` at `url` to get its tokens with the client credentials grant and `oauth`'s client. */
  function setMachineServer(api: ApiClient, name: string, oauth: Record<string, unknown>, url = upstream.url) {
    return act(api, 'SetMcpServer', {
      name,
      config: { url, auth: 'oauth', oauth: { ...oauth, grant: 'client_credentials' } },
    });
  }

  /** An agent granted `server`, once the projector has its tools. */
  async function agentFor(api: ApiClient, server: string): Promise<string> {
    return createProjectedAgent(api, `${server}-agent`, [server], 2, act);
  }

  function call(api: ApiClient, agent: string, run: string, tool: string, text: string, instance?: string) {
    if (instance !== undefined) proxy.stick(run, instance);
    return proxy.call({ account: api.principal, agent, run, tool, arguments: { text } });
  }

  /** No secret value (nor any token issued) in a response, log line, span, NATS message or clear column. */
  async function expectNothingLeaked(api: ApiClient, secrets: string[]): Promise<void> {
    const everything = [...secrets, ...as.issuedTokens(), ...asPost.issuedTokens()];
    const spans = JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.events]));
    const db = createDb(system.env.DATABASE_URL!, { max: 1 });
    try {
      const rows = await db
        .selectFrom('registry.mcp_servers')
        .select('config_cbor')
        .where('account_id', '=', api.principal)
        .execute();
      const oauthRows = await db
        .selectFrom('registry.oauth_connections')
        .select(['client_sealed', 'tokens_sealed'])
        .where('account_id', '=', api.principal)
        .execute();
      const stored = Buffer.concat([
        ...rows.map((r) => Buffer.from(r.config_cbor)),
        ...oauthRows.flatMap((r) => [Buffer.from(String(r.client_sealed)), Buffer.from(String(r.tokens_sealed))]),
      ]);
      for (const s of everything) {
        expect(responses.some((r) => r.includes(s))).toBe(false);
        expect(logLines.some((l) => l.includes(s))).toBe(false);
        expect(natsPayloads.some((p) => p.includes(s))).toBe(false);
        expect(spans.includes(s)).toBe(false);
        expect(stored.includes(s)).toBe(false);
      }
    } finally {
      await db.destroy();
    }
  }

  it('client_secret_basic: SetMcpServer connects with a token it asked for (no authorization URL), calls through the proxy work', async () => {
    const secret = `cc-basic-${randomBytes(16).toString('hex')}`;
    as.registerMachineClient('cc-basic', { secret });
    const api = new ApiClient(system.apiUrl);
    const before = {
      grants: as.stats.clientCredentialsGrants,
      authorizations: as.stats.authorizations,
      registrations: as.stats.registrations,
    };
    const set = await setMachineServer(api, 'ccbasic', { clientId: 'cc-basic', clientSecret: secret });
    expect(set.server.status).toMatchObject({ state: 'ok' });
    expect(set.authorizationUrl).toBeUndefined();
    expect(set.server.tools.map((t: { name: string }) => t.name).sort()).toEqual(['add', 'echo']);
    expect(set.server.oauthClient).toEqual({
      clientId: 'cc-basic',
      grant: 'client_credentials',
      hasClientSecret: true,
      hasPrivateKey: false,
    });
    expect(as.stats.clientCredentialsGrants).toBe(before.grants + 1);
    expect(as.stats.clientAuthMethods.at(-1)).toBe('client_secret_basic');
    expect(as.stats.authorizations).toBe(before.authorizations);
    expect(as.stats.registrations).toBe(before.registrations);

    const agent = await agentFor(api, 'ccbasic');
    expect((await call(api, agent, 'cc-basic-run', 'ccbasic__echo', 'hello')).result.text).toBe('echo: hello');
    // A refresh of the server reuses the token it holds.
    const refreshed = await act(api, 'RefreshMcpServer', { name: 'ccbasic' });
    expect(refreshed.server.status.state).toBe('ok');
    expect(as.stats.clientCredentialsGrants).toBe(before.grants + 1);
    // Nobody signs in for such a server.
    await expect(api.act('AuthorizeMcpServer', { name: 'ccbasic' })).rejects.toThrow(
      /client credentials grant: nobody signs in/,
    );
    const listed = await act(api, 'ListMcpServers');
    expect(listed.servers.find((s: { name: string }) => s.name === 'ccbasic').oauthClient.hasClientSecret).toBe(true);
    await expectNothingLeaked(api, [secret, Buffer.from(`cc-basic:${secret}`).toString('base64')]);
  });

  it('an expired token is replaced exactly once for two racing proxies (there is no refresh token)', async () => {
    const secret = `cc-race-${randomBytes(16).toString('hex')}`;
    as.registerMachineClient('cc-race', { secret });
    const api = new ApiClient(system.apiUrl);
    await setMachineServer(api, 'ccrace', { clientId: 'cc-race', clientSecret: secret });
    const agent = await agentFor(api, 'ccrace');
    const instances = ['proxy-inproc', second.instance];
    for (const [i, inst] of instances.entries())
      expect((await call(api, agent, `warm-${i}`, 'ccrace__echo', 'warm', inst)).instance).toBe(inst);

    const grants = as.stats.clientCredentialsGrants;
    as.provider.expireAccessTokens();
    const raced = await Promise.all(
      instances.flatMap((inst, i) => [
        call(api, agent, `warm-${i}`, 'ccrace__echo', `a${i}`, inst),
        call(api, agent, `new-${i}`, 'ccrace__echo', `b${i}`, inst),
      ]),
    );
    expect(raced.map((r) => r.result.text).sort()).toEqual(['echo: a0', 'echo: a1', 'echo: b0', 'echo: b1']);
    expect(as.stats.clientCredentialsGrants).toBe(grants + 1);
    const { servers } = await act(api, 'ListMcpServers');
    expect(servers.find((s: { name: string }) => s.name === 'ccrace').status.state).toBe('ok');

    // The AS stops taking the secret: the next expired token cannot be replaced. The call says
    // why (not a sign-in), and the server's status is an error for its owner.
    as.registerMachineClient('cc-race', { secret: `rotated-${randomBytes(8).toString('hex')}` });
    as.provider.expireAccessTokens();
    const err = await call(api, agent, 'warm-0', 'ccrace__echo', 'lost', instances[0]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('auth_required');
    expect((err as WireError).details).toMatchObject({ server: 'ccrace', grant: 'client_credentials' });
    expect((err as WireError).details.authorizationUrl).toBeUndefined();
    expect((err as WireError).message).toMatch(/refused the OAuth client credentials \(invalid_client/);
    const after = (await act(api, 'ListMcpServers')).servers.find((s: { name: string }) => s.name === 'ccrace');
    expect(after.status.state).toBe('error');
    expect(after.status.error).toMatch(/refused the OAuth client credentials \(invalid_client: wrong client secret\)/);
    await expectNothingLeaked(api, [secret]);
  });

  it('client_secret_post where the authorization server takes only that', async () => {
    const secret = `cc-post-${randomBytes(16).toString('hex')}`;
    asPost.registerMachineClient('cc-post', { secret });
    const api = new ApiClient(system.apiUrl);
    const set = await setMachineServer(
      api,
      'ccpost',
      { clientId: 'cc-post', clientSecret: secret, scope: 'mcp:tools' },
      upstreamPost.url,
    );
    expect(set.server.status.state).toBe('ok');
    expect(set.server.oauthClient).toEqual({
      clientId: 'cc-post',
      grant: 'client_credentials',
      hasClientSecret: true,
      hasPrivateKey: false,
      scope: 'mcp:tools',
    });
    expect(asPost.stats.clientAuthMethods).toEqual(['client_secret_post']);
    const agent = await agentFor(api, 'ccpost');
    expect((await call(api, agent, 'cc-post-run', 'ccpost__echo', 'posted')).result.text).toBe('echo: posted');
    await expectNothingLeaked(api, [secret]);
  });

  it('private_key_jwt: every token request carries a fresh ES256 assertion; the key is never shown or stored in the clear', async () => {
    const key = es256Key();
    as.registerMachineClient('cc-jwt', { publicKey: key.publicKey, alg: 'ES256' });
    const api = new ApiClient(system.apiUrl);
    const set = await setMachineServer(api, 'ccjwt', { clientId: 'cc-jwt', privateKey: key.pem, keyAlg: 'ES256' });
    expect(set.server.status.state).toBe('ok');
    expect(set.server.oauthClient).toEqual({
      clientId: 'cc-jwt',
      grant: 'client_credentials',
      hasClientSecret: false,
      hasPrivateKey: true,
      keyAlg: 'ES256',
    });
    expect(as.stats.clientAuthMethods.at(-1)).toBe('private_key_jwt');
    const agent = await agentFor(api, 'ccjwt');
    expect((await call(api, agent, 'cc-jwt-run', 'ccjwt__echo', 'signed')).result.text).toBe('echo: signed');
    // Expired: a new assertion (a new jti: the AS refuses a used one) gets a new token.
    const grants = as.stats.clientCredentialsGrants;
    as.provider.expireAccessTokens();
    expect((await call(api, agent, 'cc-jwt-run', 'ccjwt__echo', 'again')).result.text).toBe('echo: again');
    expect(as.stats.clientCredentialsGrants).toBe(grants + 1);
    expect(as.stats.clientCredentialsRefusals.filter((r) => /jti/.test(r))).toEqual([]);
    // An RSA key signing RS256 works the same way.
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsaPem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    as.registerMachineClient('cc-rsa', { publicKey: rsa.publicKey, alg: 'RS256' });
    const rs = await setMachineServer(api, 'ccrsa', { clientId: 'cc-rsa', privateKey: rsaPem, keyAlg: 'RS256' });
    expect(rs.server.status.state).toBe('ok');
    expect(as.stats.clientAuthMethods.at(-1)).toBe('private_key_jwt');
    await expectNothingLeaked(api, [pemBody(key.pem), pemBody(rsaPem)]);
  });

  it("a refused secret or a key the authorization server does not know is the server's error, not auth_required", async () => {
    const right = `cc-right-${randomBytes(16).toString('hex')}`;
    const wrong = `cc-wrong-${randomBytes(16).toString('hex')}`;
    as.registerMachineClient('cc-wrong', { secret: right });
    const api = new ApiClient(system.apiUrl);
    const set = await setMachineServer(api, 'ccwrong', { clientId: 'cc-wrong', clientSecret: wrong });
    expect(set.server.status.state).toBe('error');
    expect(set.server.status.error).toMatch(
      /the authorization server refused the OAuth client credentials \(invalid_client: wrong client secret\)/,
    );
    expect(set.authorizationUrl).toBeUndefined();
    expect(set.authorizationError).toBeUndefined();
    expect((await act(api, 'RefreshMcpServer', { name: 'ccwrong' })).server.status.state).toBe('error');
    // The owner sets the right secret: connected.
    const fixed = await setMachineServer(api, 'ccwrong', { clientId: 'cc-wrong', clientSecret: right });
    expect(fixed.server.status.state).toBe('ok');

    // A key of its own that the authorization server does not hold: the forged assertion is refused.
    const registered = es256Key();
    const other = es256Key();
    as.registerMachineClient('cc-forged', { publicKey: registered.publicKey, alg: 'ES256' });
    const forged = await setMachineServer(api, 'ccforged', {
      clientId: 'cc-forged',
      privateKey: other.pem,
      keyAlg: 'ES256',
    });
    expect(forged.server.status.state).toBe('error');
    expect(forged.server.status.error).toMatch(/invalid_client: bad assertion signature/);
    await expectNothingLeaked(api, [wrong, pemBody(other.pem)]);
  });

  it('the authorization server verifies assertions for real: forged, expired, replayed, misaddressed ones are refused', async () => {
    const key = es256Key();
    const forger = es256Key();
    as.registerMachineClient('cc-direct', { publicKey: key.publicKey, alg: 'ES256' });
    const now = Math.floor(Date.now() / 1000);
    const claims = (over: Record<string, unknown> = {}) => ({
      iss: 'cc-direct',
      sub: 'cc-direct',
      aud: as.tokenEndpoint,
      iat: now,
      exp: now + 300,
      jti: randomBytes(12).toString('hex'),
      ...over,
    });
    const token = async (jwt: string) => {
      const res = await fetch(as.tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: jwt,
        }),
      });
      return {
        status: res.status,
        body: (await res.json()) as { access_token?: string; error?: string; error_description?: string },
      };
    };
    const good = claims();
    const ok = await token(assertion(key.privateKey, good));
    expect(ok.status).toBe(200);
    expect(ok.body.access_token).toMatch(/^at_/);
    const refused = [
      [assertion(key.privateKey, good), /jti was used before/],
      [assertion(forger.privateKey, claims()), /bad assertion signature/],
      [assertion(key.privateKey, claims({ exp: now - 60 })), /expired/],
      [assertion(key.privateKey, claims({ aud: 'https://elsewhere.example/token' })), /aud is neither/],
      [assertion(key.privateKey, claims({ sub: 'someone-else' })), /iss and sub/],
      [assertion(key.privateKey, claims({ nbf: now + 600 })), /not valid yet/],
      [assertion(key.privateKey, claims(), 'RS256'), /not signed with ES256/],
      [assertion(key.privateKey, claims({ jti: undefined })), /no jti/],
    ] as const;
    for (const [jwt, reason] of refused) {
      const res = await token(jwt);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_client');
      expect(res.body.error_description).toMatch(reason);
    }
  });
});
