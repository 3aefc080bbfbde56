/**
 * Secrets sealed before origins were recorded (SECURITY.md "Known gaps": they opened for any
 * origin of their server until re-entered). Such a value now opens for nobody, in the registry's
 * discovery and in the proxy's calls; the registry binds each to the origin of the server that
 * names it (at its start, once per deployment, and in `npm run rotate-secrets`), after which it is
 * sent to that origin only. One no server names stays unbound and unsent.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { createDb, type Db } from '@mcpx/db';
import { SecretBox, secretAad, unbind, urlOrigin } from '@mcpx/secrets';
import { McpServersRepository } from '../../services/registry/src/catalog/mcp-servers.repository.js';
import { bindUnboundSecrets, bindUnboundSecretsOnce } from '../../services/registry/src/credentials/secret-binding.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { serviceUrls } from '../support/env.js';
import { ProxySystem } from '../support/proxy-system.js';

const API_KEY = 'key-before-origins-5d1e07-MUST-STAY';

describe('secrets sealed before origins were recorded', () => {
  let system: ProxySystem;
  let keyUp: TestMcpServer;
  let db: Db;
  let box: SecretBox;
  let redis: Redis;
  const silent = { info: () => undefined, warn: () => undefined };

  beforeAll(async () => {
    [system, keyUp] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({ requireHeader: { name: 'X-Api-Key', value: API_KEY } }),
    ]);
    db = createDb(system.db.url, { allowHttpHosts: ['127.0.0.1'], max: 2 });
    box = new SecretBox(loadConfig('registry', { ...system.env, OUTBOUND_PROFILE: 'local' }).keyring);
    redis = new Redis(serviceUrls().redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await db?.destroy();
    await system?.stop();
    await keyUp?.close();
  });

  /** Seals `value` the way the registry did before origins were recorded: no origin in it. */
  async function sealUnbound(name: string, value: string): Promise<void> {
    const sealed = box.seal(value, secretAad(system.account, name));
    await db
      .insertInto('registry.secrets')
      .values({ account_id: system.account, name, key_id: sealed.keyId, ciphertext: sealed.ciphertext })
      .onConflict((oc) =>
        oc.columns(['account_id', 'name']).doUpdateSet({ key_id: sealed.keyId, ciphertext: sealed.ciphertext }),
      )
      .execute();
  }

  async function openedOrigin(name: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('registry.secrets')
      .select(['key_id', 'ciphertext'])
      .where('account_id', '=', system.account)
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return unbind(box.open({ keyId: row.key_id, ciphertext: row.ciphertext }, secretAad(system.account, name))).origin;
  }

  it('an unbound secret is sent nowhere; once bound to its server origin it is sent there again', async () => {
    const set = await system.api.act<{ server: RedactedMcpServer }>('SetMcpServer', {
      name: 'kv',
      config: { url: keyUp.url, secretHeaders: { 'X-Api-Key': API_KEY } },
    });
    expect(set.server.status.state).toBe('ok');
    await system.createAgent('runner', ['kv'], 2);
    // The registry's start already ran the binding pass for this deployment (nothing to bind then).
    const done = `${system.env.REDIS_PREFIX}secrets-origin-binding:v1`;
    expect(await redis.get(done)).not.toBeNull();
    const once = () =>
      bindUnboundSecretsOnce(
        { db, box, servers: new McpServersRepository(db), redis, prefix: system.env.REDIS_PREFIX ?? '' },
        silent,
      );

    // As stored by a registry before origins: the same value, no origin; and one nobody names.
    await sealUnbound('mcp-kv-x-api-key', API_KEY);
    await sealUnbound('mcp-orphan-token', 'orphan-value');
    const before = keyUp.stats.headersSeen.get('x-api-key')?.length ?? 0;
    const refreshed = await system.api.act<{ server: RedactedMcpServer }>('RefreshMcpServer', { name: 'kv' });
    expect(refreshed.server.status.state).not.toBe('ok');
    const refused = await system.callError('runner', 'unbound', 'kv__echo', { text: 'x' });
    expect(refused.code).not.toBe('ok');
    expect(keyUp.stats.headersSeen.get('x-api-key')?.length ?? 0).toBe(before);

    // Once per deployment: done already, so the start's pass is skipped.
    expect(await once()).toBeUndefined();
    // The binding pass as a registry starting on a deployment that never ran it (what the key rotation runs too).
    await redis.del(done);
    expect(await once()).toEqual({ bound: 1, left: 1 });
    expect(await redis.get(done)).not.toBeNull();
    expect(await openedOrigin('mcp-kv-x-api-key')).toBe(urlOrigin(keyUp.url));
    expect(await openedOrigin('mcp-orphan-token')).toBeUndefined();
    // Idempotent: nothing more to bind, the orphan is still left.
    expect(await bindUnboundSecrets(db, box, new McpServersRepository(db))).toEqual({ bound: 0, left: 1 });

    const back = await system.api.act<{ server: RedactedMcpServer }>('RefreshMcpServer', { name: 'kv' });
    expect(back.server.status.state).toBe('ok');
    expect((await system.call('runner', 'bound', 'kv__echo', { text: 'y' })).result.text).toBe('echo: y');
    expect(keyUp.stats.headersSeen.get('x-api-key')).toContain(API_KEY);
  });
});
