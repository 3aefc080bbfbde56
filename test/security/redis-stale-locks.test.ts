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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SingleFlight, isRedisUnavailable } from '@mcpx/shared-state';
import { eventually } from '../support/system.js';
import { startRedisOutage, type RedisOutage } from '../support/fixtures/redis-outage.js';

/** The discovery lock's TTL: what a stale lock costs when nothing frees it. */
const TTL_MS = 60_000;
/** Well within the TTL: a lock still held this long after Redis answers again was left to expire. */
const FREED_WITHIN_MS = 5_000;

describe('single flight locks after a Redis outage: a lock whose caller gave up is free once Redis answers', () => {
  let r: RedisOutage;
  beforeAll(async () => {
    // The lock requests Redis ran, by key.
    r = await startRedisOutage(([command, key], prefix) =>
      command === 'set' && key?.startsWith(prefix) ? key : undefined,
    );
  });
  afterAll(async () => {
    await r?.close();
  });

  /** The lock is free within {@link FREED_WITHIN_MS}, and another instance takes it at once. */
  async function expectFree(key: string): Promise<void> {
    const lockKey = `${r.prefix}lock:${key}`;
    const started = Date.now();
    while ((await r.direct.exists(lockKey)) === 1 && Date.now() - started < FREED_WITHIN_MS)
      await new Promise((r) => setTimeout(r, 50));
    expect(await r.direct.pttl(lockKey), 'the lock is still held (its remaining ms)').toBe(-2);
    const other = new SingleFlight(r.direct, r.prefix);
    expect(await other.exclusive(key, { ttlMs: TTL_MS, waitMs: 0 }, async () => 'taken')).toBe('taken');
  }

  for (const how of ['exclusive', 'run'] as const) {
    it(`${how}: a lock request that timed out in the outage, sent again on the reconnect, does not hold the lock`, async () => {
      const flight = new SingleFlight(r.client, r.prefix);
      const key = `asked-${how}`;
      r.front.mode = 'blackhole';
      const work = async (): Promise<string> => 'ran';
      const err = await (
        how === 'exclusive'
          ? flight.exclusive(key, { ttlMs: TTL_MS }, work)
          : flight.run(key, { ttlMs: TTL_MS }, work, work)
      ).catch((e: unknown) => e);
      expect(isRedisUnavailable(err), String(err)).toBe(true);
      await r.answeringAgain();
      // The request that got no answer reaches Redis after all (the client sends it again).
      await eventually(
        async () => ((r.ran.get(`${r.prefix}lock:${key}`) ?? 0) > 0 ? true : undefined),
        5_000,
        'the lock request sent again on the reconnect',
      );
      await expectFree(key);
    });
  }

  it('a holder whose release is refused while Redis is away: the lock is free once Redis answers', async () => {
    const flight = new SingleFlight(r.client, r.prefix);
    const key = 'held';
    const done = await flight.exclusive(key, { ttlMs: TTL_MS }, async () => {
      // Redis goes away while the work runs: the connection drops and the relay answers no
      // reconnect, so the release at the end is refused at once (nothing is queued).
      r.front.mode = 'blackhole';
      r.front.cut();
      await eventually(async () => (r.client.status !== 'ready' ? true : undefined), 5_000, 'the client losing Redis');
      return 'done';
    });
    expect(done).toBe('done');
    expect(await r.direct.exists(`${r.prefix}lock:${key}`), 'the lock outlived its holder').toBe(1);
    await r.answeringAgain();
    await expectFree(key);
  });
});
