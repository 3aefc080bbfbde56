import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import { WireError, makeSubjects } from '@mcpx/contracts';
import { startProxy, type RunningProxy } from '@mcpx/proxy';
import { ProxyClient } from '@mcpx/proxy-client';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { connectOAuthServer, createProjectedAgent } from '../support/fixtures/agents.js';
import { TestBrowser } from '../support/oauth-browser.js';
import type { OAuthSystem } from '../support/oauth-system.js';
import type { InProcessSystem } from '../support/system.js';
import { natsPerSuite, oauthSystemPerSuite } from '../support/fixtures/suites.js';

/**
 * The proxy keeps oauth tokens fresh: on a 401 and before expiry it asks the registry
 * (`registry.oauth.refresh`), which refreshes under the per-server lock only while the stored
 * token is the one the proxy holds. Two proxies (separate caches, separate pools) race on one
 * expired token: the authorization server sees one refresh and no replayed refresh token. Against
 * a legacy protected server (SDK v1) and a modern one (SDK v2, `legacy: 'reject'`).
 */
describe.each(['legacy', 'modern'] as const)('OAuth refresh from the proxy (%s protected server)', (era) => {
  let oauth: OAuthSystem;
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let second: RunningProxy;
  let nc: NatsConnection;

  oauthSystemPerSuite({ serviceName: `mcpx-oauth-proxy-${era}`, era }, (o) => ({ oauth, system, as, upstream } = o));
  natsPerSuite((c) => (nc = c));

  beforeAll(async () => {
    second = await startProxy(loadConfig('proxy', { ...system.env, HTTP_PORT: '0', INSTANCE_ID: 'proxy-second' }), {
      telemetry: oauth.telemetry,
    });
  });

  afterAll(async () => {
    await second?.stop();
  });

  async function connected(api: ApiClient, name: string): Promise<string> {
    await connectOAuthServer(api, name, upstream.url);
    return createProjectedAgent(api, `${name}-agent`, [name], 2);
  }

  it('an expired access token is refreshed exactly once by two racing proxies; a revoked refresh token is auth_required with a new URL', async () => {
    const api = new ApiClient(system.apiUrl);
    const agent = await connected(api, 'raced');
    const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
    const instances = ['proxy-inproc', second.instance];
    const call = (run: string, instance: string, text: string) => {
      proxy.stick(run, instance);
      return proxy.call({ account: api.principal, agent, run, tool: 'raced__echo', arguments: { text } });
    };
    // Warm both proxies (each caches the token and holds a session).
    for (const [i, inst] of instances.entries()) expect((await call(`warm-${i}`, inst, 'warm')).instance).toBe(inst);

    const refreshes = as.stats.refreshes;
    as.provider.expireAccessTokens();
    const raced = await Promise.all(
      instances.flatMap((inst, i) => [call(`warm-${i}`, inst, `a${i}`), call(`new-${i}`, inst, `b${i}`)]),
    );
    expect(raced.map((r) => r.result.text).sort()).toEqual(['echo: a0', 'echo: a1', 'echo: b0', 'echo: b1']);
    expect(as.stats.refreshes).toBe(refreshes + 1);
    expect(as.stats.refreshReplays).toBe(0);
    const { servers } = await api.act('ListMcpServers');
    expect(servers.find((s: { name: string }) => s.name === 'raced').status.state).toBe('ok');

    // The refresh token is revoked: the next refused token cannot be refreshed.
    as.provider.expireAccessTokens();
    as.provider.revokeRefreshTokens();
    // The AS counts a revoked refresh token presented as a replay: exactly one presentation.
    const replays = as.stats.refreshReplays;
    const err = await call('warm-0', instances[0]!, 'lost').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('auth_required');
    // The runtime learns that the owner must authorize, never the link that would complete it.
    expect((err as WireError).message).toContain('needs its owner to authorize again');
    expect((err as WireError).details.authorizationUrl).toBeUndefined();
    expect(JSON.stringify(err)).not.toContain(as.issuer.slice(0, -1));
    expect(as.stats.refreshReplays).toBe(replays + 1);
    const after = (await api.act('ListMcpServers')).servers.find((s: { name: string }) => s.name === 'raced');
    expect(after.status.state).toBe('auth_required');
    // The status says so and carries no URL: whoever authorizes asks for a ticket of their own.
    expect(after.status).not.toHaveProperty('authorizationUrl');
    // The other proxy, still holding the dead token, says the same without another refresh.
    const other = await call('warm-1', instances[1]!, 'lost too').catch((e: unknown) => e);
    expect((other as WireError).code).toBe('auth_required');
    expect((other as WireError).details.authorizationUrl).toBeUndefined();
    expect(as.stats.refreshReplays).toBe(replays + 1);
    // The owner authorizes again in a browser: calls work again.
    const { authorizationUrl } = await api.act('AuthorizeMcpServer', { name: 'raced' });
    expect((await new TestBrowser().open(authorizationUrl)).text).toContain('Connected to raced');
    expect((await call('after', instances[1]!, 'back')).result.text).toBe('echo: back');
  });
});

describe.each(['legacy', 'modern'] as const)(
  'OAuth refresh before expiry, from the proxy (%s protected server)',
  (era) => {
    let system: InProcessSystem;
    let as: TestOAuthServer;
    let upstream: TestMcpServer;
    let nc: NatsConnection;

    // Tokens live 30 s, inside the 60 s refresh window: the proxy refreshes before using one.
    oauthSystemPerSuite(
      {
        serviceName: `mcpx-oauth-proxy-expiry-${era}`,
        era,
        authorizationServer: { accessTokenTtlSec: 30 },
      },
      (o) => ({ system, as, upstream } = o),
    );
    natsPerSuite((c) => (nc = c));

    it('refreshes a token about to expire before the call, so the server never refuses one', async () => {
      const api = new ApiClient(system.apiUrl);
      await connectOAuthServer(api, 'soon', upstream.url);
      const agentId = await createProjectedAgent(api, 'soon-agent', ['soon'], 2);
      const proxy = new ProxyClient(nc, makeSubjects(system.env.NATS_PREFIX));
      const before = as.stats.refreshes;
      const out = await proxy.call({
        account: api.principal,
        agent: agentId,
        run: 'soon-run',
        tool: 'soon__echo',
        arguments: { text: 'fresh' },
      });
      expect(out.result.text).toBe('echo: fresh');
      expect(as.stats.refreshes).toBeGreaterThan(before);
      expect(as.stats.refused).toBe(0);
      expect(as.stats.refreshReplays).toBe(0);
    });
  },
);
