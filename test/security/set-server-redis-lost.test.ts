/**
 * SetMcpServer when Redis stops answering after the action was admitted, against the running
 * registry and a real Redis behind a relay that goes silent: the answer and the stored row agree.
 * An `unavailable` (dependency `redis`) says the action was not run, so nothing may have been
 * written; a server that was saved is answered as saved. Before, the row was saved first and the
 * discovery's Redis admissions (the server's lock, the account's lease) taken after it: Redis
 * lost between the two answered "the action was not run" with the server saved.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type ServerStatus } from '@mcpx/contracts';
import {
  echoTool,
  startOAuthServer,
  startProtectedMcpServer,
  startTestMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { serverOk } from '../support/fixtures/agents.js';
import { redisMonitor } from '../support/fixtures/redis-outage.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';
import { startFaultyFront, type FaultyFront } from '../ops/support/faulty-front.js';

describe('SetMcpServer with Redis lost after admission: the answer tells what was written', () => {
  let front: FaultyFront;
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let as: TestOAuthServer;
  /** A server that takes only the authorization server's tokens (client credentials). */
  let machine: TestMcpServer;
  /** The test's own connection to the real Redis, not through the relay. */
  let direct: Redis;

  beforeAll(async () => {
    const redis = new URL(serviceUrls().redis);
    front = await startFaultyFront({ host: redis.hostname, port: Number(redis.port || 6379) });
    direct = new Redis(serviceUrls().redis);
    as = await startOAuthServer({ clientCredentials: { authMethods: ['client_secret_basic'] } });
    [h, upstream, machine] = await Promise.all([
      RegistryHarness.start({
        env: { REDIS_URL: `redis://127.0.0.1:${front.port}` },
        projector: false,
        registry: { reprobe: { baseMs: 50, intervalMs: 50 } },
      }),
      startTestMcpServer({ tools: [echoTool()] }),
      startProtectedMcpServer(as),
    ]);
  });
  afterAll(async () => {
    if (front !== undefined) front.mode = 'pass';
    front?.cut();
    await h?.stop();
    await upstream?.close();
    await machine?.close();
    await as?.close();
    direct?.disconnect();
    await front?.close();
  });

  /** Redis answers again: the relay passes, and the connections it silenced are closed (the clients reconnect). */
  function restore(): void {
    front.mode = 'pass';
    front.cut();
  }

  /** Waits until the registry reaches Redis again (an action is admitted): a test starts from a Redis that answers. */
  async function answering(api: ApiClient): Promise<void> {
    await eventually(
      async () =>
        (await api.act('ListMcpServers').then(
          () => true,
          () => false,
        ))
          ? true
          : undefined,
      15_000,
      'the registry reaching Redis',
    );
  }

  function prefix(): string {
    return h.env.REDIS_PREFIX ?? 'mcpx:';
  }

  async function storedNames(): Promise<string[]> {
    const r = await sql<{ name: string }>`SELECT name FROM registry.mcp_servers ORDER BY name`.execute(h.sql);
    return r.rows.map((x) => x.name);
  }

  it('Redis lost while the set waits for its discovery lock: unavailable, and nothing was written', async () => {
    const api = h.api();
    await answering(api);
    const lockKey = `${prefix()}lock:discovery:${api.principal}:held`;
    // Another holder has the server's discovery lock (a discovery of it in flight elsewhere).
    await direct.set(lockKey, 'elsewhere', 'PX', 60_000);
    const monitor = await redisMonitor(direct);
    let asked = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'set' && args[1] === lockKey) asked = true;
    });
    try {
      const answer = api
        .act('SetMcpServer', { name: 'held', config: { url: upstream.url } })
        .catch((err: unknown) => err);
      // The set was admitted (its signature, nonce and rates counted) and now waits for the lock.
      await eventually(async () => (asked ? true : undefined), 15_000, 'the set asking for the discovery lock');
      front.mode = 'blackhole';
      const err = await answer;
      expect(err).toBeInstanceOf(WireError);
      expect((err as WireError).code, (err as Error).message).toBe('unavailable');
      expect((err as WireError).details).toMatchObject({ dependency: 'redis' });
      expect((err as Error).message).toContain('the action was not run');
      // "Not run" is true: the server is not stored.
      expect(await storedNames()).not.toContain('held');
    } finally {
      monitor.disconnect();
      restore();
      await direct.del(lockKey);
    }
  });

  /**
   * Sends SetMcpServer `fields` with its write held behind a lock on the servers' table (after
   * everything the set asks Redis before writing), silences Redis, then lets the write go: the
   * set's answer, or the error it was answered with.
   */
  async function setWithRedisLostAtWrite(api: ApiClient, fields: Record<string, unknown>): Promise<unknown> {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const holding = new Promise<void>((r) => (locked = r));
    const lock = h.sql.transaction().execute(async (trx) => {
      await sql`LOCK TABLE registry.mcp_servers IN SHARE ROW EXCLUSIVE MODE`.execute(trx);
      locked();
      await released;
    });
    try {
      await holding;
      const answer = api.act('SetMcpServer', fields).catch((err: unknown) => err);
      let early: unknown;
      void answer.then((a) => (early = a));
      await eventually(
        async () => {
          if (early !== undefined)
            throw new Error(
              `answered before it wrote: ${early instanceof Error ? early.message : JSON.stringify(early)}`,
            );
          const r = await sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE c.relname = 'mcp_servers' AND NOT l.granted`.execute(h.sql);
          return (r.rows[0]?.n ?? 0) > 0 ? true : undefined;
        },
        15_000,
        'the set waiting to write its row',
      );
      front.mode = 'blackhole';
      release();
      await lock;
      return await answer;
    } finally {
      release();
      await lock.catch(() => undefined);
    }
  }

  /** The answer of a set that should have succeeded, or a failure that names its code. */
  function answered(got: unknown): { server: { name: string; status: ServerStatus; tools: unknown[] } } {
    expect(got, got instanceof Error ? `${(got as WireError).code} ${got.message}` : '').not.toBeInstanceOf(Error);
    return got as { server: { name: string; status: ServerStatus; tools: unknown[] } };
  }

  it('Redis lost while the set writes (after its Redis admissions): the server is saved, discovered, and answered as saved', async () => {
    const api = h.api();
    await answering(api);
    try {
      const { server } = answered(await setWithRedisLostAtWrite(api, { name: 'saved', config: { url: upstream.url } }));
      expect(server.name).toBe('saved');
      expect(server.status.state, JSON.stringify(server.status)).toBe('ok');
      expect(await storedNames()).toContain('saved');
    } finally {
      restore();
    }
  });

  it('Redis lost while a saved server gets its OAuth token: answered as saved, its discovery failed and is tried again', async () => {
    const api = h.api();
    await answering(api);
    const secret = `cc-${randomBytes(16).toString('hex')}`;
    as.registerMachineClient('cc-lost', { secret });
    const config = {
      url: machine.url,
      auth: 'oauth',
      oauth: { clientId: 'cc-lost', clientSecret: secret, grant: 'client_credentials' },
    };
    try {
      // The write goes through; the discovery's 401 asks for a token under a Redis lock that
      // cannot be taken now.
      const { server } = answered(await setWithRedisLostAtWrite(api, { name: 'machine', config }));
      expect(server.status.state, JSON.stringify(server.status)).toBe('error');
      expect(server.status.error).toContain('redis was unavailable during the discovery');
      expect(JSON.stringify(server)).not.toContain(secret);
      const row = await sql<{ next: Date | null }>`
        SELECT next_probe_at AS next FROM registry.mcp_servers WHERE name = 'machine'`.execute(h.sql);
      expect(row.rows[0]?.next, 'a re-probe armed').not.toBeNull();
    } finally {
      restore();
    }
    // Re-probed once Redis answers again, soon: no lock asked for in the outage holds after it
    // (a request sent again on the reconnect is released by the instance that gave up on it),
    // so the re-probe does not wait for the OAuth token lock's 30 s or the discovery lock's 60 s.
    await answering(api);
    const recovered = await serverOk(api, 'machine', 20_000, 'the re-probe of the server once Redis answers');
    expect(recovered.status.state).toBe('ok');
  }, 90_000);
});
