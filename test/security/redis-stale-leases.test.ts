/**
 * The "at most N at once" leases (`LeaseQuota`: an account's places for discoveries in flight,
 * its event streams) after a Redis outage, against a real Redis behind a relay that goes silent,
 * then passes again: a lease whose caller gave up is gone as soon as Redis answers, not at its
 * expiry. Before, an acquire that timed out in the outage was sent once more when the client
 * reconnected and took one of the scope's places for a caller long gone, removed only at that
 * instance's next acquire; a holder's release refused while Redis was away was not sent again.
 * Either held the place for the lease's TTL (30 s) when no later acquire came.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseQuota, isRedisUnavailable } from '@mcpx/shared-state';
import { eventually } from '../support/system.js';
import { startRedisOutage, type RedisOutage } from '../support/fixtures/redis-outage.js';

/** Well within the lease's 30 s TTL: a lease still held this long after Redis answers again was left to expire. */
const FREED_WITHIN_MS = 5_000;

describe('quota leases after a Redis outage: a lease whose caller gave up is gone once Redis answers', () => {
  let r: RedisOutage;
  beforeAll(async () => {
    // The acquires Redis ran (the quota's script), by key.
    r = await startRedisOutage(([command, , , key], prefix) =>
      (command === 'evalsha' || command === 'eval') && key?.startsWith(prefix) ? key : undefined,
    );
  });
  afterAll(async () => {
    await r?.close();
  });

  /** The scope's only place is free within {@link FREED_WITHIN_MS}, and another instance takes it at once. */
  async function expectFree(scope: string): Promise<void> {
    const other = new LeaseQuota(r.direct, r.prefix);
    const started = Date.now();
    while ((await other.count('discoveries', scope)) > 0 && Date.now() - started < FREED_WITHIN_MS)
      await new Promise((r) => setTimeout(r, 50));
    expect(await other.count('discoveries', scope), 'leases still held').toBe(0);
    const taken = await other.acquire('discoveries', scope, 1);
    expect(taken.ok).toBe(true);
    if (taken.ok) taken.lease.release();
  }

  it('an acquire that timed out in the outage, sent again on the reconnect, does not hold a place', async () => {
    const quota = new LeaseQuota(r.client, r.prefix);
    const scope = 'asked';
    r.front.mode = 'blackhole';
    const asked = quota.acquire('discoveries', scope, 1).catch((e: unknown) => e);
    // The connection drops while the acquire waits for its answer, and the relay answers no
    // reconnect: the acquire fails while the client is away, so nothing can be sent after it
    // until Redis is back, yet the client keeps it to send again.
    await new Promise((r) => setTimeout(r, 300));
    r.front.cut();
    const err = await asked;
    expect(isRedisUnavailable(err), String(err)).toBe(true);
    expect(r.client.status).not.toBe('ready');
    await r.answeringAgain();
    // The acquire that got no answer reaches Redis after all (the client sends it again).
    await eventually(
      async () => ((r.ran.get(`${r.prefix}quota:discoveries:{${scope}}`) ?? 0) > 0 ? true : undefined),
      5_000,
      'the acquire sent again on the reconnect',
    );
    await expectFree(scope);
  });

  it('a holder whose release is refused while Redis is away: its place is free once Redis answers', async () => {
    const quota = new LeaseQuota(r.client, r.prefix);
    const scope = 'held';
    const taken = await quota.acquire('discoveries', scope, 1);
    expect(taken.ok).toBe(true);
    // Redis goes away while the lease is held: the connection drops and the relay answers no
    // reconnect, so the release is refused at once (nothing is queued).
    r.front.mode = 'blackhole';
    r.front.cut();
    await eventually(async () => (r.client.status !== 'ready' ? true : undefined), 5_000, 'the client losing Redis');
    if (taken.ok) taken.lease.release();
    expect(await new LeaseQuota(r.direct, r.prefix).count('discoveries', scope), 'the lease outlived its holder').toBe(
      1,
    );
    await r.answeringAgain();
    await expectFree(scope);
  });
});
