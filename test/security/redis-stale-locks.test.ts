/**
 * The single flight locks (a server's discovery, a server's OAuth tokens) after a Redis outage,
 * against a real Redis behind a relay that goes silent, then passes again: a lock whose caller
 * gave up is free as soon as Redis answers, not at its expiry. Before, a lock request that timed
 * out in the outage was sent once more when the client reconnected (the client's rule for
 * commands that got no answer) and took the lock for a caller long gone; a holder's release
 * refused while the client was reconnecting left its lock too. Either held for the lock's TTL
 * (30 s for the OAuth token lock, 60 s for the discovery lock), stalling the discoveries and
 * token refreshes that followed.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailFastRedis, SingleFlight, isRedisUnavailable } from '@mcpx/shared-state';
import { serviceUrls } from '../support/env.js';
import { eventually } from '../support/system.js';
import { startFaultyFront, type FaultyFront } from '../ops/support/faulty-front.js';

/** The discovery lock's TTL: what a stale lock costs when nothing frees it. */
const TTL_MS = 60_000;
/** Well within the TTL: a lock still held this long after Redis answers again was left to expire. */
const FREED_WITHIN_MS = 5_000;

describe('single flight locks after a Redis outage: a lock whose caller gave up is free once Redis answers', () => {
  let front: FaultyFront;
  /** The service's client, through the relay, with the services' fail-fast options. */
  let client: FailFastRedis;
  /** The test's own connection to the real Redis, not through the relay. */
  let direct: Redis;
  let monitor: Redis;
  /** The lock requests Redis ran, by key. */
  const requested = new Map<string, number>();
  const prefix = `mcpx-t${randomBytes(4).toString('hex')}:`;

  beforeAll(async () => {
    const redis = new URL(serviceUrls().redis);
    front = await startFaultyFront({ host: redis.hostname, port: Number(redis.port || 6379) });
    client = new FailFastRedis(`redis://127.0.0.1:${front.port}`);
    client.on('error', () => undefined);
    await client.connect();
    direct = new Redis(serviceUrls().redis);
    monitor = await direct.duplicate().monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'set' && args[1]?.startsWith(prefix))
        requested.set(args[1], (requested.get(args[1]) ?? 0) + 1);
    });
  });
  afterAll(async () => {
    if (front !== undefined) front.mode = 'pass';
    monitor?.disconnect();
    client?.disconnect();
    if (direct !== undefined) {
      const keys = await direct.keys(`${prefix}*`);
      if (keys.length > 0) await direct.del(...keys);
      direct.disconnect();
    }
    await front?.close();
  });

  /** Redis answers again: the relay passes, the connections it silenced are closed, the client reconnects. */
  async function answeringAgain(): Promise<void> {
    front.mode = 'pass';
    front.cut();
    await eventually(
      async () => ((await client.ping().catch(() => undefined)) === 'PONG' ? true : undefined),
      15_000,
      'the client reaching Redis again',
    );
  }

  /** The lock is free within {@link FREED_WITHIN_MS}, and another instance takes it at once. */
  async function expectFree(key: string): Promise<void> {
    const lockKey = `${prefix}lock:${key}`;
    const started = Date.now();
    while ((await direct.exists(lockKey)) === 1 && Date.now() - started < FREED_WITHIN_MS)
      await new Promise((r) => setTimeout(r, 50));
    expect(await direct.pttl(lockKey), 'the lock is still held (its remaining ms)').toBe(-2);
    const other = new SingleFlight(direct, prefix);
    expect(await other.exclusive(key, { ttlMs: TTL_MS, waitMs: 0 }, async () => 'taken')).toBe('taken');
  }

  for (const how of ['exclusive', 'run'] as const) {
    it(`${how}: a lock request that timed out in the outage, sent again on the reconnect, does not hold the lock`, async () => {
      const flight = new SingleFlight(client, prefix);
      const key = `asked-${how}`;
      front.mode = 'blackhole';
      const work = async (): Promise<string> => 'ran';
      const err = await (
        how === 'exclusive'
          ? flight.exclusive(key, { ttlMs: TTL_MS }, work)
          : flight.run(key, { ttlMs: TTL_MS }, work, work)
      ).catch((e: unknown) => e);
      expect(isRedisUnavailable(err), String(err)).toBe(true);
      await answeringAgain();
      // The request that got no answer reaches Redis after all (the client sends it again).
      await eventually(
        async () => ((requested.get(`${prefix}lock:${key}`) ?? 0) > 0 ? true : undefined),
        5_000,
        'the lock request sent again on the reconnect',
      );
      await expectFree(key);
    });
  }

  it('a holder whose release is refused while Redis is away: the lock is free once Redis answers', async () => {
    const flight = new SingleFlight(client, prefix);
    const key = 'held';
    const done = await flight.exclusive(key, { ttlMs: TTL_MS }, async () => {
      // Redis goes away while the work runs: the connection drops and the relay answers no
      // reconnect, so the release at the end is refused at once (nothing is queued).
      front.mode = 'blackhole';
      front.cut();
      await eventually(async () => (client.status !== 'ready' ? true : undefined), 5_000, 'the client losing Redis');
      return 'done';
    });
    expect(done).toBe('done');
    expect(await direct.exists(`${prefix}lock:${key}`), 'the lock outlived its holder').toBe(1);
    await answeringAgain();
    await expectFree(key);
  });
});
