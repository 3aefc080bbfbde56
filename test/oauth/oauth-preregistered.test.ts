import { describe, expect, it } from 'vitest';
import { createDb } from '@mcpx/db';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { TestBrowser } from '../support/oauth-browser.js';
import type { InProcessSystem } from '../support/system.js';
import { oauthSystemPerSuite } from '../support/fixtures/suites.js';

/** A client the owner registered with the authorization server: used as is, its secret sealed. */
describe('OAuth with a pre-registered client', () => {
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;

  oauthSystemPerSuite({ serviceName: 'mcpx-oauth-prereg' }, (o) => ({ system, as, upstream } = o));

  it('uses config.oauth {clientId, clientSecret} without registering; the secret is never stored in the clear or shown', async () => {
    const secret = 'pre-registered-client-secret-0123456789';
    as.provider.registered.set('pre-client', {
      client_id: 'pre-client',
      client_secret: secret,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      redirect_uris: [`${system.apiUrl}/v1/oauth/callback`],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    const api = new ApiClient(system.apiUrl);
    const set = await api.act('SetMcpServer', {
      name: 'prereg',
      config: { url: upstream.url, auth: 'oauth', oauth: { clientId: 'pre-client', clientSecret: secret } },
    });
    expect(set.server.status.state).toBe('auth_required');
    const browser = new TestBrowser();
    const asked = await browser.start(set.authorizationUrl);
    expect(asked.searchParams.get('client_id')).toBe('pre-client');
    expect(as.stats.registrations).toBe(0);
    expect((await browser.open(asked)).text).toContain('Connected to prereg');
    const listed = await api.act('ListMcpServers');
    expect(listed.servers.find((s: { name: string }) => s.name === 'prereg').status.state).toBe('ok');
    expect(JSON.stringify([set, listed]).includes(secret)).toBe(false);
    const db = createDb(system.env.DATABASE_URL!, { max: 1 });
    try {
      const rows = await db
        .selectFrom('registry.mcp_servers')
        .select('config_cbor')
        .where('account_id', '=', api.principal)
        .execute();
      const oauthRows = await db
        .selectFrom('registry.oauth_connections')
        .select('client_sealed')
        .where('account_id', '=', api.principal)
        .execute();
      expect(Buffer.concat(rows.map((r) => Buffer.from(r.config_cbor))).includes(secret)).toBe(false);
      expect(oauthRows.length).toBe(1);
      expect(Buffer.from(String(oauthRows[0]!.client_sealed)).includes(secret)).toBe(false);
    } finally {
      await db.destroy();
    }
  });

  it('config.oauth is validated', async () => {
    const api = new ApiClient(system.apiUrl);
    await expect(
      api.act('SetMcpServer', { name: 'prebad', config: { url: upstream.url, oauth: { clientId: 'x' } } }),
    ).rejects.toThrow(/config\.oauth: is only taken with auth oauth/);
    await expect(
      api.act('SetMcpServer', {
        name: 'prebad',
        config: { url: upstream.url, auth: 'oauth', oauth: { clientId: '' } },
      }),
    ).rejects.toThrow(/config\.oauth\.clientId/);
    await expect(
      api.act('SetMcpServer', {
        name: 'prebad',
        config: { url: upstream.url, auth: 'oauth', oauth: { clientId: 'x', other: 1 } },
      }),
    ).rejects.toThrow(/config\.oauth\.other/);
  });
});
