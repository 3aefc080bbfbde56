import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseQuota } from './quotas.js';
import { RateLimiter } from './rate-limiter.js';
import { startStallingRedis, type StallingRedis } from './redis-keys.test-support.js';
import { FailFastRedis, REDIS_FAIL_FAST, RedisUnavailableError, isRedisUnavailable } from './redis-options.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(redisUrl);
afterAll(() => redis.disconnect());
const prefix = (): string => `mcpx-t${randomBytes(4).toString('hex')}:`;

describe('RateLimiter (real Redis)', () => {
  it('admits a burst, then refuses with a retry hint; buckets of other keys are their own', async () => {
    const limiter = new RateLimiter(redis, prefix());
    const limit = { ratePerSecond: 1, burst: 3 };
    const taken = [];
    for (let i = 0; i < 4; i++) taken.push(await limiter.take('signer', 'a', limit));
    expect(taken.slice(0, 3).every((d) => d.ok)).toBe(true);
    const refused = taken[3]!;
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect((await limiter.take('signer', 'b', limit)).ok).toBe(true);
    expect((await limiter.take('address', 'a', limit)).ok).toBe(true);
  });

  it('two instances share one bucket', async () => {
    const p = prefix();
    const other = new Redis(redisUrl);
    try {
      const a = new RateLimiter(redis, p);
      const b = new RateLimiter(other, p);
      const limit = { ratePerSecond: 0.5, burst: 2 };
      expect((await a.take('k', 'x', limit)).ok).toBe(true);
      expect((await b.take('k', 'x', limit)).ok).toBe(true);
      expect((await a.take('k', 'x', limit)).ok).toBe(false);
      expect((await b.take('k', 'x', limit)).ok).toBe(false);
    } finally {
      other.disconnect();
    }
  });

  it('a rate of 0 is no limit', async () => {
    const limiter = new RateLimiter(redis, prefix());
    for (let i = 0; i < 5; i++) expect((await limiter.take('k', 'x', { ratePerSecond: 0, burst: 0 })).ok).toBe(true);
  });
});

describe('LeaseQuota (real Redis)', () => {
  it('holds at most max leases across instances; a release frees one', async () => {
    const p = prefix();
    const other = new Redis(redisUrl);
    try {
      const a = new LeaseQuota(redis, p);
      const b = new LeaseQuota(other, p);
      const first = await a.acquire('streams', 'acct', 2);
      const second = await b.acquire('streams', 'acct', 2);
      expect(first.ok && second.ok).toBe(true);
      const third = await a.acquire('streams', 'acct', 2);
      expect(third).toMatchObject({ ok: false, held: 2 });
      if (!third.ok) expect(third.retryAfterMs).toBeGreaterThan(0);
      // Another scope is not affected.
      expect((await a.acquire('streams', 'other', 2)).ok).toBe(true);
      if (second.ok) second.lease.release();
      await new Promise((r) => setTimeout(r, 20));
      expect(await a.count('streams', 'acct')).toBe(1);
      expect((await b.acquire('streams', 'acct', 2)).ok).toBe(true);
    } finally {
      other.disconnect();
    }
  });

  it("a dead holder's lease expires; a live one is renewed past its ttl", async () => {
    const p = prefix();
    const dead = new Redis(redisUrl);
    const live = new LeaseQuota(redis, p, { ttlMs: 300 });
    const kept = await live.acquire('d', 'acct', 2);
    expect(kept.ok).toBe(true);
    const crashed = new LeaseQuota(dead, p, { ttlMs: 300 });
    expect((await crashed.acquire('d', 'acct', 2)).ok).toBe(true);
    dead.disconnect(); // its renewals stop: its lease runs out
    const end = Date.now() + 5_000;
    while ((await live.count('d', 'acct')) > 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    expect(await live.count('d', 'acct')).toBe(1);
    await new Promise((r) => setTimeout(r, 700));
    expect(await live.count('d', 'acct')).toBe(1);
    if (kept.ok) kept.lease.release();
  });
});

/**
 * The attack: an account that holds its quota makes Redis slow (a flood of its own, a stalled
 * network) so that the quota's command times out, hoping the quota then admits. Against a real
 * Redis behind a relay that stops answering: every acquire and every take is refused, typed as an
 * outage, and a lease whose reply was lost is removed once Redis answers again.
 */
describe('a Redis that stops answering: the quotas refuse, never admit (real Redis behind a stalling relay)', () => {
  let relay: StallingRedis;
  let client: FailFastRedis;
  const errors: Error[] = [];

  /** Relays again and waits for the client's new connection (without an offline queue a command needs one). */
  async function resume(): Promise<void> {
    relay.resume();
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      if (client.status === 'ready' && (await client.ping().catch(() => '')) === 'PONG') return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the client did not reconnect');
  }

  beforeAll(async () => {
    relay = await startStallingRedis();
    // A short command timeout: the test waits for it on every stalled command.
    client = new FailFastRedis(relay.url, { ...REDIS_FAIL_FAST, commandTimeout: 300 });
    client.on('error', () => undefined);
    await client.connect();
  });
  afterAll(async () => {
    client?.disconnect();
    await relay?.close();
  });

  it('an account at its quota gets no lease while Redis does not answer, nor does one below it', async () => {
    const p = prefix();
    const quota = new LeaseQuota(client, p, { onError: (err) => errors.push(err) });
    expect((await quota.acquire('streams', 'attacker', 2)).ok).toBe(true);
    expect((await quota.acquire('streams', 'attacker', 2)).ok).toBe(true);
    expect((await quota.acquire('streams', 'attacker', 2)).ok).toBe(false);
    relay.stall('requests');
    try {
      for (const scope of ['attacker', 'newcomer']) {
        const err = await quota.acquire('streams', scope, 2).then(
          (d) => d,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(RedisUnavailableError);
        expect(isRedisUnavailable(err)).toBe(true);
      }
    } finally {
      await resume();
    }
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(await quota.count('streams', 'attacker')).toBe(2);
    expect((await quota.acquire('streams', 'attacker', 2)).ok).toBe(false);
    expect((await quota.acquire('streams', 'newcomer', 2)).ok).toBe(true);
  });

  it('an acquire that ran but whose reply was lost holds nothing: its lease is removed once Redis answers', async () => {
    const p = prefix();
    const quota = new LeaseQuota(client, p);
    const kept = await quota.acquire('d', 'acct', 2);
    expect(kept.ok).toBe(true);
    relay.stall('replies');
    try {
      const err = await quota.acquire('d', 'acct', 2).then(
        (d) => d,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RedisUnavailableError);
      // It ran: Redis holds a lease nobody was given.
      expect(await redis.zcard(`${p}quota:d:{acct}`)).toBe(2);
    } finally {
      await resume();
    }
    // Removed before the next acquire counts: one place is free again, and only one.
    expect((await quota.acquire('d', 'acct', 2)).ok).toBe(true);
    expect(await redis.zcard(`${p}quota:d:{acct}`)).toBe(2);
    expect((await quota.acquire('d', 'acct', 2)).ok).toBe(false);
  });

  it("a rate limit told to refuse refuses, typed; one told to admit (the endpoint's documented choice) admits, degraded", async () => {
    const p = prefix();
    const refusing = new RateLimiter(client, p, { whenRedisFails: 'refuse' });
    const admitting = new RateLimiter(client, p, { whenRedisFails: 'admit' });
    const limit = { ratePerSecond: 1, burst: 1 };
    expect((await refusing.take('signer', 'a', limit)).ok).toBe(true);
    expect((await refusing.take('signer', 'a', limit)).ok).toBe(false);
    relay.stall('requests');
    try {
      const err = await refusing.take('signer', 'a', limit).then(
        (d) => d,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RedisUnavailableError);
      expect(await admitting.take('signer', 'a', limit)).toEqual({ ok: true, degraded: true });
    } finally {
      await resume();
    }
  });
});
