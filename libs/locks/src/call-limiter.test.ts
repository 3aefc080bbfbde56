import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { CallLimiter } from './call-limiter.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function eventually(fn: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('CallLimiter (real Redis)', () => {
  it("frees a dead holder's concurrency lease when it expires", async () => {
    const redis = new Redis(redisUrl);
    try {
      const limiter = new CallLimiter(redis, `mcpx-t${randomBytes(4).toString('hex')}:`);
      const limits = { maxConcurrency: 1, ratePerSecond: 0 };
      const held = await limiter.admit('acct:srv', limits, 'crashed', 200);
      expect(held.ok).toBe(true);
      const refused = await limiter.admit('acct:srv', limits, 'other', 200);
      expect(refused).toMatchObject({ ok: false, reason: 'concurrency' });
      // The holder never releases (it died); its lease runs out.
      await eventually(async () => (await limiter.admit('acct:srv', limits, 'other', 200)).ok, 5_000);
      // A rate of 2 per second: a bucket of two, then a hint of about half a second.
      const rate = { maxConcurrency: 0, ratePerSecond: 2 };
      expect((await limiter.admit('acct:rate', rate, 'r1', 1000)).ok).toBe(true);
      expect((await limiter.admit('acct:rate', rate, 'r2', 1000)).ok).toBe(true);
      const limited = await limiter.admit('acct:rate', rate, 'r3', 1000);
      expect(limited).toMatchObject({ ok: false, reason: 'rate' });
      if (!limited.ok) expect(limited.retryAfterMs).toBeGreaterThan(400);
      const none = await limiter.admit('acct:none', { maxConcurrency: 0, ratePerSecond: 0 }, 'x', 200);
      expect(none.ok).toBe(true);
    } finally {
      redis.disconnect();
    }
  });
});
