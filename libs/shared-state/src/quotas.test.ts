import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { LeaseQuota } from './quotas.js';
import { RateLimiter } from './rate-limiter.js';

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
