import { createServer } from 'node:http';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseKeyring } from '@mcpx/config';
import { SecretBox, vendorTokensAad } from '@mcpx/secrets';
import { listenOnLoopback } from '../servers/loopback.js';
import {
  startOAuthServer,
  startProtectedMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { authorizeVendor, registerVendorClient, type VendorClient } from '../auth-methods/vendor-oauth.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness, type HarnessOptions } from '../support/registry-harness.js';
import { registryPerSuite } from '../support/fixtures/suites.js';
import { eventually } from '../support/system.js';
import { NEW_KEY, OLD_KEY, rotateSecrets, rotationReport, tables } from './rotation.js';

/** A registry on the old key alone, no projector, its re-probes too far off to run during a test. */
const ROTATING: HarnessOptions = {
  env: { SECRETS_KEYRING: OLD_KEY },
  projector: false,
  registry: { reprobe: { baseMs: 600_000 } },
};

const bothKeys = new SecretBox(parseKeyring(`${OLD_KEY},${NEW_KEY}`));

/**
 * An account's vendor tokens as stored: the key that sealed them, and what they open to (the one
 * stored casing, RFC 6749 names; a row sealed in the older camelCase opens as it was written).
 */
async function storedVendorTokens(
  h: RegistryHarness,
  account: string,
): Promise<{ keyId: string; tokens: Record<string, string> }> {
  const row = await h.sql
    .selectFrom('registry.vendor_connections')
    .select(['tokens_key_id', 'tokens_sealed'])
    .where('account_id', '=', account)
    .where('vendor', '=', 'github')
    .executeTakeFirstOrThrow();
  return {
    keyId: row.tokens_key_id,
    tokens: JSON.parse(
      bothKeys.open({ keyId: row.tokens_key_id, ciphertext: row.tokens_sealed }, vendorTokensAad(account, 'github')),
    ),
  };
}

describe('secrets rotation: a value written while it runs', () => {
  let h: RegistryHarness;
  registryPerSuite(ROTATING, (started) => (h = started));

  it('is kept as written, never replaced with the stale plaintext the rotation read; the next run re-seals it', async () => {
    const raced = h.api();
    const other = h.api();
    await raced.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_beforeRace1' });
    await other.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_otherAccount1' });
    // A service still on the old ring writes the raced row: it holds the row's lock meanwhile.
    const writer = new pg.Client({ connectionString: h.env.DATABASE_URL });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        "SELECT 1 FROM registry.vendor_connections WHERE account_id = $1 AND vendor = 'github' FOR UPDATE",
        [raced.principal],
      );
      const rotation = rotateSecrets(h.env.DATABASE_URL ?? '', `${OLD_KEY},${NEW_KEY}`);
      // The rotation has read the row and waits for its lock to re-seal it.
      await eventually(
        async () => {
          const r = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'rotate-secrets'
            AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple') AND query ILIKE '%vendor_connections%'`.execute(
            h.sql,
          );
          return (r.rows[0]?.n ?? 0) > 0 ? true : undefined;
        },
        45_000,
        'the rotation to wait on the raced row',
      );
      const written = new SecretBox(parseKeyring(OLD_KEY)).seal(
        JSON.stringify({ accessToken: 'gho_duringRace1' }),
        vendorTokensAad(raced.principal, 'github'),
      );
      await writer.query(
        "UPDATE registry.vendor_connections SET tokens_key_id = $1, tokens_sealed = $2 WHERE account_id = $3 AND vendor = 'github'",
        [written.keyId, written.ciphertext, raced.principal],
      );
      await writer.query('COMMIT');

      const first = await rotation;
      expect(first.code, first.stderr).toBe(0);
      // The other account's tokens were re-sealed; the raced value was skipped and is counted as left.
      expect(rotationReport(first)).toEqual({
        rotated: 1,
        keyId: 'new',
        left: 1,
        tables: tables([0, 0], [0, 0], [1, 1]),
      });
      expect(await storedVendorTokens(h, raced.principal)).toEqual({
        keyId: 'old',
        tokens: { accessToken: 'gho_duringRace1' },
      });
      expect(await storedVendorTokens(h, other.principal)).toEqual({
        keyId: 'new',
        tokens: { access_token: 'gho_otherAccount1' },
      });

      const second = await rotateSecrets(h.env.DATABASE_URL ?? '', `${OLD_KEY},${NEW_KEY}`);
      expect(rotationReport(second)).toEqual({
        rotated: 1,
        keyId: 'new',
        left: 0,
        tables: tables([0, 0], [0, 0], [1, 0]),
      });
      expect(await storedVendorTokens(h, raced.principal)).toEqual({
        keyId: 'new',
        tokens: { accessToken: 'gho_duringRace1' },
      });
      expect(first.stdout + first.stderr + second.stdout + second.stderr).not.toMatch(/gho_/);
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      await writer.end();
    }
  });
});

describe('secrets rotation: a value that does not open', () => {
  let h: RegistryHarness;
  registryPerSuite(ROTATING, (started) => (h = started));

  it('fails the command naming the table, the row and the key id, never the value; nothing changes', async () => {
    const api = h.api();
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_strandedToken1' });
    const before = await h.settledDigest();
    // A ring without the key that sealed it (the old key left too early).
    const res = await rotateSecrets(h.env.DATABASE_URL ?? '', NEW_KEY);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(
      `registry.vendor_connections.tokens_sealed of account ${api.principal}, vendor github: secret sealed with unknown key id old`,
    );
    expect(res.stdout + res.stderr).not.toContain('gho_strandedToken1');
    expect(res.stdout + res.stderr).not.toContain(NEW_KEY.slice(4));
    expect(await h.tableDigest()).toEqual(before);
  });
});

/** A token endpoint in front of `as` that holds every request until `release()`. */
async function startHeldTokenEndpoint(
  as: TestOAuthServer,
): Promise<{ url: string; held(): number; release(): void; close(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      held++;
      void released
        .then(() =>
          fetch(new URL('token', as.issuer), {
            method: 'POST',
            headers: { 'content-type': req.headers['content-type'] ?? '' },
            body: Buffer.concat(chunks),
          }),
        )
        .then(async (up) =>
          res
            .writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' })
            .end(Buffer.from(await up.arrayBuffer())),
        )
        .catch(() => res.writeHead(502).end());
    });
  });
  const { port, close } = await listenOnLoopback(server);
  return { url: `http://127.0.0.1:${port}/token`, held: () => held, release, close };
}

/**
 * A vendor refresh in flight while the rotation re-seals the tokens it read: the plaintext did not
 * change, so the refresh's new tokens are stored (dropping them would lose a rotated refresh token).
 */
describe('secrets rotation: a vendor refresh in flight', () => {
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let client: VendorClient;
  let tokenEndpoint: Awaited<ReturnType<typeof startHeldTokenEndpoint>>;
  let h: RegistryHarness;

  beforeAll(async () => {
    as = await startOAuthServer();
    upstream = await startProtectedMcpServer(as);
    client = await registerVendorClient(as);
    tokenEndpoint = await startHeldTokenEndpoint(as);
    h = await RegistryHarness.start({
      ...ROTATING,
      env: {
        SECRETS_KEYRING: OLD_KEY,
        BUILTIN_ENDPOINTS: `github=${upstream.url}`,
        BUILTIN_TOKEN_ENDPOINTS: `github=${tokenEndpoint.url}`,
        BUILTIN_VENDOR_CLIENTS: `github=${client.clientId}:${client.clientSecret}`,
      },
    });
  });

  afterAll(async () => {
    tokenEndpoint?.release();
    await h?.stop();
    await tokenEndpoint?.close();
    await upstream?.close();
    await as?.close();
  });

  it('keeps the tokens the refresh got', async () => {
    let api = h.api();
    const key = api.key;
    const given = await authorizeVendor(as, client);
    await api.act('SetVendorConnection', { vendor: 'github', ...given });
    await h.replaceRegistry({ SECRETS_KEYRING: `${OLD_KEY},${NEW_KEY}` });
    api = new ApiClient(h.apiUrl, key);

    as.provider.expireAccessTokens();
    const refresh = api.act('RefreshMcpServer', { name: 'github' });
    await eventually(
      async () => (tokenEndpoint.held() > 0 ? true : undefined),
      15_000,
      'the refresh to reach the token endpoint',
    );
    const rotated = await rotateSecrets(h.env.DATABASE_URL ?? '', `${OLD_KEY},${NEW_KEY}`);
    expect(rotationReport(rotated)).toEqual({
      rotated: 1,
      keyId: 'new',
      left: 0,
      tables: tables([0, 0], [0, 0], [1, 0]),
    });
    tokenEndpoint.release();
    expect((await refresh).server.status.state).toBe('ok');

    const stored = await storedVendorTokens(h, api.principal);
    expect(stored.keyId).toBe('new');
    expect(stored.tokens.access_token).toMatch(/./);
    expect(stored.tokens.access_token).not.toBe(given.accessToken);
    expect(stored.tokens.refresh_token).toMatch(/./);
    expect(stored.tokens.refresh_token).not.toBe(given.refreshToken);
    expect(as.stats.refreshes).toBe(1);
    // The refresh token it stored is the live one: the next refresh succeeds without a replay.
    as.provider.expireAccessTokens();
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server.status.state).toBe('ok');
    expect(as.stats.refreshes).toBe(2);
    expect(as.stats.refreshReplays).toBe(0);
  });
});
