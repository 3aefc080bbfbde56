import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload, type RedactedMcpServer } from '@mcpx/contracts';
import { createDb, type Db } from '@mcpx/db';
import { generateKeyPair } from '@mcpx/envelope';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import {
  startOAuthServer,
  startProtectedMcpServer,
  startTestMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { storedSecretNames } from '../support/fixtures/stored-secrets.js';
import { ProxySystem } from '../support/proxy-system.js';
import { InProcessSystem, eventually } from '../support/system.js';
import { actionError } from '../approvals/approval-tools.js';

const TOKEN = 'tok-owner-7f3a91-MUST-STAY';
const API_KEY = 'key-owner-c02d55-MUST-STAY';
const DEEP_TOKEN = 'tok-deep-4be810-MUST-STAY';
const GH_TOKEN = 'tok-ghx-99aa01-MUST-STAY';

type SetAnswer = { server: RedactedMcpServer; droppedSecrets?: { headers: string[]; oauth: boolean } };

/**
 * Secrets stay with their origin: a WRITER (or anyone who can change a server's URL) re-points a
 * server holding the owner's bearer token and secret header at a server it controls. That server
 * must never see them, neither from the registry's discovery nor from the proxy's calls.
 */
describe('secrets stay with the origin they were given for', () => {
  let system: ProxySystem;
  let bearerUp: TestMcpServer;
  let keyUp: TestMcpServer;
  let evil: TestMcpServer;
  let writer: ApiClient;
  let sql: Db;

  beforeAll(async () => {
    [system, bearerUp, keyUp, evil] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({ requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` } }),
      startTestMcpServer({ requireHeader: { name: 'X-Api-Key', value: API_KEY } }),
      startTestMcpServer(),
    ]);
    const key = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    writer = new ApiClient(system.api.apiUrl, key, system.account);
    sql = createDb(system.db.url, { allowHttpHosts: ['127.0.0.1'], max: 1 });
  });
  afterAll(async () => {
    await sql?.destroy();
    await system?.stop();
    await Promise.all([bearerUp?.close(), keyUp?.close(), evil?.close()]);
  });

  /** Every header value the attacker's server ever received. */
  const seenByEvil = (): string => JSON.stringify([...evil.stats.headersSeen.entries()]);
  const secretNames = (): Promise<string[]> => storedSecretNames(sql, system.account);

  it('a WRITER re-points servers with a bearer token and a secret header: the new host sees neither', async () => {
    const owner = system.api;
    expect(
      (
        await owner.act<SetAnswer>('SetMcpServer', {
          name: 'vault',
          config: { url: bearerUp.url, auth: 'bearer', token: TOKEN },
        })
      ).server.status.state,
    ).toBe('ok');
    const kv = await owner.act<SetAnswer>('SetMcpServer', {
      name: 'kv',
      config: { url: keyUp.url, headers: { 'X-Plain': 'plain-1' }, secretHeaders: { 'X-Api-Key': API_KEY } },
    });
    expect(kv.server.status.state).toBe('ok');
    await system.createAgent('runner', ['vault', 'kv'], 4);
    expect((await system.call('runner', 'before', 'vault__echo', { text: 'a' })).result.text).toBe('echo: a');
    expect((await system.call('runner', 'before', 'kv__echo', { text: 'b' })).result.text).toBe('echo: b');

    // Keeping a stored secret across the move by naming it is refused, and nothing is written.
    const kept = await actionError(
      writer.act('SetMcpServer', {
        name: 'kv',
        config: { url: evil.url, secretRefs: { 'X-Api-Key': 'mcp-kv-x-api-key' } },
      }),
    );
    expect(kept).toMatchObject({ code: 'invalid_input', details: { field: 'config.secretRefs.X-Api-Key' } });
    expect(
      (await owner.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find((s) => s.name === 'kv')?.url,
    ).toBe(keyUp.url);

    // The moves: saved, and the answer says what was dropped (names, never values).
    const vault = await writer.act<SetAnswer>('SetMcpServer', {
      name: 'vault',
      config: { url: evil.url, auth: 'bearer' },
    });
    expect(vault.droppedSecrets).toEqual({ headers: ['Authorization'], oauth: false });
    expect(vault.server).toMatchObject({ url: evil.url, auth: 'bearer', hasSecrets: false, secretHeaderNames: [] });
    const moved = await writer.act<SetAnswer>('SetMcpServer', {
      name: 'kv',
      config: { url: evil.url, headers: { 'X-Plain': 'plain-1' } },
    });
    expect(moved.droppedSecrets).toEqual({ headers: ['X-Api-Key'], oauth: false });
    expect(moved.server).toMatchObject({ hasSecrets: false, headerNames: ['X-Plain'] });
    expect(JSON.stringify([vault, moved])).not.toMatch(new RegExp(`${TOKEN}|${API_KEY}`));
    expect(await secretNames()).toEqual([]);

    // Discovery reached the new host (it answered, without any secret), and so do the proxy's calls.
    expect(vault.server.status.state).toBe('ok');
    await writer.act('RefreshMcpServer', { name: 'vault' });
    await eventually(
      async () =>
        (await system.call('runner', 'after', 'vault__echo', { text: 'c' }).catch(() => undefined))?.result.text ===
        'echo: c'
          ? true
          : undefined,
      15_000,
      'a call to the new host',
    );
    await eventually(
      async () =>
        (await system.call('runner', 'after', 'kv__echo', { text: 'd' }).catch(() => undefined))?.result.text ===
        'echo: d'
          ? true
          : undefined,
      15_000,
      'a call to the new host',
    );
    expect(evil.stats.calls).toBeGreaterThanOrEqual(2);
    expect(evil.stats.headersSeen.get('x-plain')).toContain('plain-1');
    expect(evil.stats.headersSeen.has('authorization')).toBe(false);
    expect(evil.stats.headersSeen.has('x-api-key')).toBe(false);
    expect(seenByEvil()).not.toContain(TOKEN);
    expect(seenByEvil()).not.toContain(API_KEY);

    // The owner gives the token again, for the new host: from then on it is sent there.
    const again = await owner.act<SetAnswer>('SetMcpServer', {
      name: 'vault',
      config: { url: evil.url, auth: 'bearer', token: 'tok-for-the-new-host' },
    });
    expect(again.droppedSecrets).toBeUndefined();
    expect(evil.stats.headersSeen.get('authorization')).toContain('Bearer tok-for-the-new-host');
  });

  it("secretRefs name only the server's own secrets: another server's is refused, whoever signs", async () => {
    await system.api.act('SetMcpServer', {
      name: 'gh-x',
      config: { url: bearerUp.url, secretHeaders: { Token: GH_TOKEN } },
    });
    await system.api.act('SetMcpServer', {
      name: 'vault2',
      config: { url: bearerUp.url, auth: 'bearer', token: TOKEN },
    });
    const before = await secretNames();
    for (const signer of [writer, system.api]) {
      const other = await actionError(
        signer.act('SetMcpServer', {
          name: 'steal',
          config: { url: evil.url, secretRefs: { Authorization: 'mcp-vault2-authorization' } },
        }),
      );
      expect(other).toMatchObject({ code: 'invalid_input', details: { field: 'config.secretRefs.Authorization' } });
      // `gh` + `X-Token` spells gh-x's `Token` secret: the right shape, but not a secret gh holds.
      const spelled = await actionError(
        signer.act('SetMcpServer', {
          name: 'gh',
          config: { url: evil.url, secretRefs: { 'X-Token': 'mcp-gh-x-token' } },
        }),
      );
      expect(spelled).toMatchObject({ code: 'invalid_input', details: { field: 'config.secretRefs.X-Token' } });
    }
    const names = (await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.map((s) => s.name);
    expect(names).not.toContain('steal');
    expect(names).not.toContain('gh');
    expect(await secretNames()).toEqual(before);
    expect(seenByEvil()).not.toContain(GH_TOKEN);
    expect(seenByEvil()).not.toContain(TOKEN);
  });

  it('a config moved behind the action (a direct write) still sends the secret only to its origin', async () => {
    // A server of its own that requires the token, so the genuine origin is proven to get it.
    const deepUp = await startTestMcpServer({
      requireHeader: { name: 'Authorization', value: `Bearer ${DEEP_TOKEN}` },
    });
    try {
      expect(
        (
          await system.api.act<SetAnswer>('SetMcpServer', {
            name: 'deep',
            config: { url: deepUp.url, auth: 'bearer', token: DEEP_TOKEN },
          })
        ).server.status.state,
      ).toBe('ok');
      await system.createAgent('deep-runner', ['deep'], 2);
      expect((await system.call('deep-runner', 'd1', 'deep__echo', { text: 'x' })).result.text).toBe('echo: x');

      // Rewrite the row's URL straight in the database: no action, no drop of the secret.
      const row = await sql
        .selectFrom('registry.mcp_servers')
        .select('config_cbor')
        .where('account_id', '=', system.account)
        .where('name', '=', 'deep')
        .executeTakeFirstOrThrow();
      const config = decodePayload<Record<string, unknown>>(row.config_cbor);
      await sql
        .updateTable('registry.mcp_servers')
        .set({ url: evil.url, config_cbor: encodePayload({ ...config, url: evil.url }) })
        .where('account_id', '=', system.account)
        .where('name', '=', 'deep')
        .execute();
      expect(await secretNames()).toContain('mcp-deep-authorization');

      const refreshed = await system.api.act<SetAnswer>('RefreshMcpServer', { name: 'deep' });
      expect(refreshed.server).toMatchObject({ url: evil.url, status: { state: 'ok' } });
      const evilCalls = evil.stats.calls;
      await eventually(
        async () =>
          (await system.call('deep-runner', 'd2', 'deep__echo', { text: 'y' }).catch(() => undefined))?.result.text ===
            'echo: y' && evil.stats.calls > evilCalls
            ? true
            : undefined,
        15_000,
        'a call to the rewritten URL',
      );
      expect(seenByEvil()).not.toContain(DEEP_TOKEN);
    } finally {
      await deepUp.close();
    }
  });
});

/**
 * OAuth state stays with its origin too: a pre-registered client credentials client (its secret)
 * and its tokens. A WRITER re-points such a server at a host whose metadata names the WRITER's own
 * authorization server; that server must never be asked for a token with the owner's client.
 */
describe('OAuth clients and tokens stay with the origin they were set up for', () => {
  const CLIENT_SECRET = 'cs-owner-5d1e77-MUST-STAY';
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let evilAs: TestOAuthServer;
  let evilUp: TestMcpServer;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-secrets-origin-oauth' });
    [as, evilAs] = await Promise.all([
      startOAuthServer({ clientCredentials: { authMethods: ['client_secret_post', 'client_secret_basic'] } }),
      startOAuthServer({ clientCredentials: { authMethods: ['client_secret_post', 'client_secret_basic'] } }),
    ]);
    [upstream, evilUp] = await Promise.all([startProtectedMcpServer(as), startProtectedMcpServer(evilAs)]);
    system = await InProcessSystem.start({ telemetry, logSink: () => {} });
  });
  afterAll(async () => {
    await system?.stop();
    await Promise.all([upstream?.close(), evilUp?.close()]);
    await Promise.all([as?.close(), evilAs?.close()]);
    await telemetry?.shutdown();
  });

  it("a WRITER re-points a client credentials server: the new host's authorization server never gets the owner's client", async () => {
    const owner = new ApiClient(system.apiUrl);
    const key = generateKeyPair();
    await owner.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    const writer = new ApiClient(system.apiUrl, key, owner.principal);
    as.registerMachineClient('owner-client', { secret: CLIENT_SECRET });
    const set = await owner.act<SetAnswer>('SetMcpServer', {
      name: 'm2m',
      config: {
        url: upstream.url,
        auth: 'oauth',
        oauth: { clientId: 'owner-client', clientSecret: CLIENT_SECRET, grant: 'client_credentials' },
      },
    });
    expect(set.server.status.state).toBe('ok');
    expect(as.stats.clientCredentialsGrants).toBe(1);

    const moved = await writer.act<SetAnswer>('SetMcpServer', {
      name: 'm2m',
      config: { url: evilUp.url, auth: 'oauth' },
    });
    expect(moved.droppedSecrets).toEqual({ headers: [], oauth: true });
    expect(moved.server.oauthClient).toBeUndefined();
    await writer.act('RefreshMcpServer', { name: 'm2m' });
    // No token request at all reached the other authorization server (each would carry the secret).
    expect(evilAs.stats.clientCredentialsGrants).toBe(0);
    expect(evilAs.stats.clientCredentialsRefusals).toEqual([]);
    const tokens = as.issuedTokens();
    expect(tokens.length).toBeGreaterThan(0);
    const sent = JSON.stringify([...evilUp.stats.headersSeen.entries()]);
    for (const t of tokens) expect(sent).not.toContain(t);
    expect(sent).not.toContain(CLIENT_SECRET);
  });
});
