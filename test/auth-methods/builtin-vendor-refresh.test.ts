import type { Subscription } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type RedactedMcpServer } from '@mcpx/contracts';
import {
  startOAuthServer,
  startProtectedMcpServer,
  startTestMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { ApiClient } from '../support/api-client.js';
import { ProxySystem } from '../support/proxy-system.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';
import { authorizeVendor, registerVendorClient, vendorEnv, type VendorClient } from './vendor-oauth.js';

/**
 * A vendor connection's tokens come from a real authorization server (the test one, rotating
 * refresh tokens) and the built-in's endpoint accepts only its live access tokens. The registry
 * refreshes them, for its own discoveries and for the proxies (`registry.oauth.refresh`), under
 * one per-vendor lock: a rotating refresh token is presented once.
 */
describe('vendor token refresh for built-in servers', () => {
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let client: VendorClient;
  let system: ProxySystem;
  let wire: Subscription;
  const seen: Uint8Array[] = [];

  beforeAll(async () => {
    as = await startOAuthServer();
    // echo has no hints (a built-in asks by the name heuristic); add says it only reads (act).
    upstream = await startProtectedMcpServer(as);
    client = await registerVendorClient(as);
    system = await ProxySystem.start({
      proxies: 2,
      env: { BUILTIN_ENDPOINTS: `github=${upstream.url}`, ...vendorEnv(as, client) },
    });
    // Every message of the system's namespace, to prove no token or client secret travels.
    wire = system.nc.subscribe(`${system.subjects.prefix}>`, { callback: (_e, msg) => void seen.push(msg.data) });
  });

  afterAll(async () => {
    wire?.unsubscribe();
    await system?.stop();
    await upstream?.close();
    await as?.close();
  });

  const github = async (api: ApiClient): Promise<RedactedMcpServer> =>
    (await api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find((s) => s.name === 'github')!;

  it('two racing proxies refresh an expired vendor token once; a revoked refresh token is auth_required, once', async () => {
    const api = system.api;
    await api.act('SetVendorConnection', { vendor: 'github', ...(await authorizeVendor(as, client)) });
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server).toMatchObject({ status: { state: 'ok' } });
    await system.createAgent('dev', ['github'], 2);
    await eventually(async () =>
      (await api.act('ListAgentTools', { agent: system.agentId('dev') })).tools.some(
        (t: { name: string }) => t.name === 'github__add',
      )
        ? true
        : undefined,
    );
    const instances = system.proxies.map((p) => p.instance);
    const call = (run: string, instance: string, a: number) => {
      system.client.stick(run, instance);
      return system.call('dev', run, 'github__add', { a, b: 1 });
    };
    for (const [i, inst] of instances.entries()) expect((await call(`warm-${i}`, inst, 0)).instance).toBe(inst);

    const refreshes = as.stats.refreshes;
    as.provider.expireAccessTokens();
    const raced = await Promise.all(
      instances.flatMap((inst, i) => [call(`warm-${i}`, inst, 10 + i), call(`new-${i}`, inst, 20 + i)]),
    );
    expect(raced.map((r) => r.result.text).sort()).toEqual(['11', '12', '21', '22']);
    expect(as.stats.refreshes).toBe(refreshes + 1);
    expect(as.stats.refreshReplays).toBe(0);
    expect((await github(api)).status.state).toBe('ok');
    // A discovery refused by the vendor (its token died early) renews the token once and goes on.
    as.provider.expireAccessTokens();
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server.status.state).toBe('ok');
    expect(as.stats.refreshes).toBe(refreshes + 2);
    expect(as.stats.refreshReplays).toBe(0);

    // The refresh token is revoked: the next refused token cannot be refreshed, and the dead
    // refresh token is presented exactly once (the server counts it as a replay).
    as.provider.expireAccessTokens();
    as.provider.revokeRefreshTokens();
    const replays = as.stats.refreshReplays;
    const err = await call('warm-0', instances[0]!, 1).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('auth_required');
    expect((err as WireError).details).toMatchObject({ server: 'github', vendor: 'github' });
    expect((err as WireError).message).toContain('connect github again');
    expect(as.stats.refreshReplays).toBe(replays + 1);
    const dark = await github(api);
    expect(dark.status).toMatchObject({ state: 'auth_required' });
    expect(dark.status.error).toContain('connect GitHub again');
    // The other proxy, holding the same dead token, and a discovery say the same without presenting it again.
    expect(((await call('warm-1', instances[1]!, 2).catch((e: unknown) => e)) as WireError).code).toBe('auth_required');
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server.status.state).toBe('auth_required');
    expect(as.stats.refreshReplays).toBe(replays + 1);

    // The owner connects the vendor again: calls work again.
    const again = await authorizeVendor(as, client);
    expect((await api.act('SetVendorConnection', { vendor: 'github', ...again })).servers[0].status.state).toBe(
      'unknown',
    );
    await eventually(
      async () =>
        (await call('after', instances[1]!, 3).catch(() => undefined))?.result.text === '4' ? true : undefined,
      15_000,
      'calls after reconnecting',
    );

    // Nothing secret in any answer or message.
    const secrets = [...as.issuedTokens(), client.clientSecret];
    const answers = JSON.stringify([raced, err, dark, await github(api)]);
    for (const s of secrets) expect(answers).not.toContain(s);
    await system.nc.flush();
    const wireText = Buffer.concat(seen.map((d) => Buffer.from(d))).toString('latin1');
    for (const s of secrets) expect(wireText).not.toContain(s);
  });

  it('refreshes a vendor token about to expire before a discovery and before a call', async () => {
    const api = new ApiClient(system.api.apiUrl);
    // The token is live at the vendor, but the connection says it expires within the refresh margin.
    const tokens = { ...(await authorizeVendor(as, client)), expiresAt: new Date(Date.now() + 5_000).toISOString() };
    await api.act('SetVendorConnection', { vendor: 'github', ...tokens });
    const before = { refreshes: as.stats.refreshes, refused: as.stats.refused, replays: as.stats.refreshReplays };
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server.status.state).toBe('ok');
    expect(as.stats.refreshes).toBe(before.refreshes + 1);
    expect(as.stats.refused).toBe(before.refused);

    // The refreshed token is good for an hour: a call uses it as is.
    const { agent } = await api.act('CreateAgent', { name: 'soon', definition: { mcpServers: ['github'] } });
    await eventually(async () =>
      (await api.act('ListAgentTools', { agent: agent.id })).tools.some(
        (t: { name: string }) => t.name === 'github__add',
      )
        ? true
        : undefined,
    );
    /** github's `add` of `a` and `b` in run `run`, as the agent calls it: the result's text. */
    const add = async (run: string, a: number, b: number): Promise<string | undefined> =>
      (
        await system.client.call({
          account: api.principal,
          agent: agent.id,
          run,
          tool: 'github__add',
          arguments: { a, b },
        })
      ).result.text;
    expect(await add('soon-1', 2, 2)).toBe('4');
    expect(as.stats.refreshes).toBe(before.refreshes + 1);

    // A connection expiring soon again: the proxy refreshes before the call, never sending a dead token.
    await api.act('SetVendorConnection', {
      vendor: 'github',
      ...(await authorizeVendor(as, client)),
      expiresAt: new Date(Date.now() + 5_000).toISOString(),
    });
    const refreshes = as.stats.refreshes;
    expect(await add('soon-2', 3, 3)).toBe('6');
    expect(as.stats.refreshes).toBe(refreshes + 1);
    expect(as.stats.refused).toBe(before.refused);
    expect(as.stats.refreshReplays).toBe(before.replays);
  });
});

describe('a vendor token endpoint that fails', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let broken: FrontServer;

  beforeAll(async () => {
    upstream = await startTestMcpServer({ requireHeader: { name: 'Authorization', value: 'Bearer gho_accepted' } });
    // Answers every token request with HTTP 500 (echoing the request's headers back).
    broken = await startFrontServer({ mode: 'echo', status: 500 });
    h = await RegistryHarness.start({
      registry: { reprobe: { baseMs: 600_000 } },
      env: {
        BUILTIN_ENDPOINTS: `github=${upstream.url}`,
        BUILTIN_TOKEN_ENDPOINTS: `github=${broken.origin}/token`,
        BUILTIN_VENDOR_CLIENTS: 'github=client-id:topsecret-client',
      },
    });
  });
  afterAll(async () => {
    await h?.stop();
    await broken?.close();
    await upstream?.close();
  });

  it('is an error naming the endpoint, not auth_required; the refresh token is kept for the next try; nothing secret shows', async () => {
    const api = h.api();
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_refused', refreshToken: 'ghr_keepme' });
    const first = (await api.act<{ server: RedactedMcpServer }>('RefreshMcpServer', { name: 'github' })).server;
    expect(first.status.state).toBe('error');
    expect(first.status.error).toBe('the GitHub token endpoint could not refresh the connection (HTTP 500, denied)');
    expect(broken.requests).toBe(1);
    const second = (await api.act<{ server: RedactedMcpServer }>('RefreshMcpServer', { name: 'github' })).server;
    expect(second.status).toMatchObject({ state: 'error', failures: 2 });
    expect(broken.requests).toBe(2);
    const shown = JSON.stringify([first, second, await api.act('ListMcpServers'), h.logs]);
    for (const secret of ['gho_refused', 'ghr_keepme', 'topsecret-client']) expect(shown).not.toContain(secret);
  });
});
