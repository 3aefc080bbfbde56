import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseKeyring } from '@mcpx/config';
import { SecretBox, vendorTokensAad } from '@mcpx/secrets';
import {
  startOAuthServer,
  startProtectedMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';
import { authorizeVendor, registerVendorClient, type VendorClient } from './vendor-oauth.js';

/**
 * The owner gives a vendor connection new tokens while the registry is refreshing the old ones:
 * the refresh must not write over the owner's (compare and set on the sealed tokens it read).
 */
describe('a vendor refresh racing the owner', () => {
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let slowToken: FrontServer;
  let client: VendorClient;
  let h: RegistryHarness;

  beforeAll(async () => {
    as = await startOAuthServer();
    upstream = await startProtectedMcpServer(as);
    client = await registerVendorClient(as);
    // The vendor's token endpoint, behind a second of delay: the refresh is in flight long enough.
    slowToken = await startFrontServer({ mode: 'forward', target: as.issuer, delayMs: 1_000 });
    h = await RegistryHarness.start({
      // No background probe meddles: only the test's own refresh runs.
      registry: { reprobe: { baseMs: 600_000 } },
      env: {
        BUILTIN_ENDPOINTS: `github=${upstream.url}`,
        BUILTIN_TOKEN_ENDPOINTS: `github=${slowToken.origin}/token`,
        BUILTIN_VENDOR_CLIENTS: `github=${client.clientId}:${client.clientSecret}`,
      },
    });
  });

  afterAll(async () => {
    await h?.stop();
    await slowToken?.close();
    await upstream?.close();
    await as?.close();
  });

  it("keeps the tokens the owner gave during the refresh; the refresh's own are dropped", async () => {
    const api = h.api();
    await api.act('SetVendorConnection', { vendor: 'github', ...(await authorizeVendor(as, client)) });
    as.provider.expireAccessTokens();
    const before = slowToken.requests;
    const refresh = api.act('RefreshMcpServer', { name: 'github' });
    await eventually(
      async () => (slowToken.requests > before ? true : undefined),
      15_000,
      'the refresh to reach the token endpoint',
    );
    const owners = await authorizeVendor(as, client);
    await api.act('SetVendorConnection', { vendor: 'github', ...owners });
    await refresh;

    const row = await h.sql
      .selectFrom('registry.vendor_connections')
      .select(['tokens_key_id', 'tokens_sealed'])
      .where('account_id', '=', api.principal)
      .executeTakeFirstOrThrow();
    const box = new SecretBox(parseKeyring(h.env.SECRETS_KEYRING));
    // Sealed in the one stored casing of tokens (RFC 6749 names).
    const stored = JSON.parse(
      box.open({ keyId: row.tokens_key_id, ciphertext: row.tokens_sealed }, vendorTokensAad(api.principal, 'github')),
    ) as { access_token: string; refresh_token?: string };
    expect(stored.access_token).toBe(owners.accessToken);
    expect(stored.refresh_token).toBe(owners.refreshToken);
    // And the owner's tokens work: the built-in discovers with them.
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server.status.state).toBe('ok');
  });
});
