import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { runCommand } from '../support/cli.js';

const K1 = `k1:${Buffer.alloc(32, 11).toString('base64')}`;
const K2 = `k2:${Buffer.alloc(32, 22).toString('base64')}`;
const TOKEN = 'Bearer tok-rotate-5e1f';

/** `npm run rotate-secrets`, as the operator runs it (README, Operations). */
const rotateSecrets = (env: Record<string, string>) => runCommand('npm', ['run', '--silent', 'rotate-secrets'], env);

/** The rotation command runs through npm, as an operator runs it (seconds of start-up each on a busy machine). */
describe('secrets: key-ring rotation', { timeout: 180_000 }, () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([
      RegistryHarness.start({ env: { SECRETS_KEYRING: K1 }, projector: false }),
      startTestMcpServer({ era: 'modern', requireHeader: { name: 'Authorization', value: TOKEN } }),
    ]);
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  const keyIds = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (await h.sql.selectFrom('registry.secrets').select(['name', 'key_id']).orderBy('name').execute()).map((r) => [
        r.name,
        r.key_id,
      ]),
    );

  it('old ciphertexts open with [old, new], new ones use the newest, the command re-seals the rest, then the old key can go', async () => {
    let api = h.api();
    const key = api.key;
    expect(
      (
        await api.act('SetMcpServer', {
          name: 'one',
          config: { url: upstream.url, secretHeaders: { Authorization: TOKEN } },
        })
      ).server.status.state,
    ).toBe('ok');
    expect(await keyIds()).toEqual({ 'mcp-one-authorization': 'k1' });
    const ciphertext = async (): Promise<string> =>
      Buffer.from(
        (
          await h.sql
            .selectFrom('registry.secrets')
            .select('ciphertext')
            .where('name', '=', 'mcp-one-authorization')
            .executeTakeFirstOrThrow()
        ).ciphertext,
      ).toString('hex');
    expect(await ciphertext()).not.toContain(Buffer.from('tok-rotate').toString('hex'));

    // A new key joins the ring: old ciphertexts still open, new secrets use the new key.
    await h.replaceRegistry({ SECRETS_KEYRING: `${K1},${K2}` });
    api = new ApiClient(h.apiUrl, key);
    expect((await api.act('RefreshMcpServer', { name: 'one' })).server.status.state).toBe('ok');
    expect(
      (
        await api.act('SetMcpServer', {
          name: 'two',
          config: { url: upstream.url, secretHeaders: { Authorization: TOKEN } },
        })
      ).server.status.state,
    ).toBe('ok');
    expect(await keyIds()).toEqual({ 'mcp-one-authorization': 'k1', 'mcp-two-authorization': 'k2' });

    // The rotation command re-seals what the old key sealed; a second run has nothing to do.
    const env = {
      DATABASE_URL: h.env.DATABASE_URL ?? '',
      SECRETS_KEYRING: `${K1},${K2}`,
      OUTBOUND_PROFILE: 'production',
    };
    const first = await rotateSecrets(env);
    expect(first.code, first.stderr).toBe(0);
    const tables = (secrets: number) => ({
      'registry.secrets': { rotated: secrets, left: 0 },
      'registry.oauth_connections': { rotated: 0, left: 0 },
      'registry.vendor_connections': { rotated: 0, left: 0 },
    });
    expect(JSON.parse(first.stdout.trim().split('\n').at(-1) ?? '')).toEqual({
      rotated: 1,
      keyId: 'k2',
      left: 0,
      tables: tables(1),
    });
    expect(await keyIds()).toEqual({ 'mcp-one-authorization': 'k2', 'mcp-two-authorization': 'k2' });
    const again = await rotateSecrets(env);
    expect(JSON.parse(again.stdout.trim().split('\n').at(-1) ?? '')).toEqual({
      rotated: 0,
      keyId: 'k2',
      left: 0,
      tables: tables(0),
    });
    // Its output and errors never carry key material.
    expect(first.stdout + first.stderr + again.stdout + again.stderr).not.toContain(
      Buffer.alloc(32, 11).toString('base64'),
    );

    // The old key leaves the ring: everything still opens, and the upstream gets the secret.
    await h.replaceRegistry({ SECRETS_KEYRING: K2 });
    api = new ApiClient(h.apiUrl, key);
    // (A modern server: no handshake, each refresh lists it again with the opened secret.)
    const seen = upstream.stats.listCalls;
    expect((await api.act('RefreshMcpServer', { name: 'one' })).server.status.state).toBe('ok');
    expect((await api.act('RefreshMcpServer', { name: 'two' })).server.status.state).toBe('ok');
    expect(upstream.stats.listCalls - seen).toBe(2);

    // A ring missing the key of a ciphertext: the record says so (no 500, no key material).
    await h.replaceRegistry({ SECRETS_KEYRING: K1 });
    api = new ApiClient(h.apiUrl, key);
    const stuck = (await api.act('RefreshMcpServer', { name: 'one' })).server;
    expect(stuck.status.state).toBe('error');
    expect(stuck.status.error).toContain('could not be decrypted');
  });

  it('a wrong key ring fails the command with a message naming no key material', async () => {
    const res = await rotateSecrets({
      DATABASE_URL: h.env.DATABASE_URL ?? '',
      SECRETS_KEYRING: 'k1:short',
      OUTBOUND_PROFILE: 'production',
    });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('SECRETS_KEYRING key k1 must be 32 bytes');
  });
});
