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

  it('holds the cap and the rate across two processes while admitting from leases', async () => {
    const [ra, rb] = [new Redis(redisUrl), new Redis(redisUrl)];
    const prefix = `mcpx-t${randomBytes(4).toString('hex')}:`;
    const a = new CallLimiter(ra, prefix, { slotHoldMs: 100 });
    const b = new CallLimiter(rb, prefix, { slotHoldMs: 100 });
    try {
      // Concurrency 3 shared: two calls on a, one on b, then both refused.
      const cap = { maxConcurrency: 3, ratePerSecond: 0 };
      const held = [
        await a.admit('s:c', cap, 'a1', 60_000),
        await a.admit('s:c', cap, 'a2', 60_000),
        await b.admit('s:c', cap, 'b1', 60_000),
      ];
      expect(held.every((h) => h.ok)).toBe(true);
      expect(await a.admit('s:c', cap, 'a3', 60_000)).toMatchObject({ ok: false, reason: 'concurrency' });
      expect(await b.admit('s:c', cap, 'b2', 60_000)).toMatchObject({ ok: false, reason: 'concurrency' });
      // A slot freed on a is reused by a at once (no round trip: the answer is not a promise)…
      if (held[0]!.ok) held[0]!.release();
      const reused = a.admit('s:c', cap, 'a4', 60_000);
      expect(reused).not.toBeInstanceOf(Promise);
      expect((reused as { ok: boolean }).ok).toBe(true);
      expect(await b.admit('s:c', cap, 'b3', 60_000)).toMatchObject({ ok: false, reason: 'concurrency' });
      // …and goes back to Redis after the hold, so b gets it.
      if (held[1]!.ok) held[1]!.release();
      await eventually(async () => (await b.admit('s:c', cap, 'b4', 60_000)).ok, 2_000);
      expect(await a.admit('s:c', cap, 'a5', 60_000)).toMatchObject({ ok: false, reason: 'concurrency' });

      // A rate of 200/s (a bucket of 200, leased 10 at a time): two processes admitting as fast as
      // they can get the bucket plus what refills meanwhile, never more.
      const rate = { maxConcurrency: 0, ratePerSecond: 200 };
      const started = Date.now();
      let ok = 0;
      for (let i = 0; i < 600; i++) {
        const r = await (i % 2 === 0 ? a : b).admit('s:r', rate, `r${i}`, 1_000);
        if (r.ok) ok++;
      }
      const elapsed = Date.now() - started;
      expect(ok).toBeGreaterThanOrEqual(200);
      // Leased tokens are taken from the bucket: burst + refill, plus at most one batch per process in flight.
      expect(ok).toBeLessThanOrEqual(200 + Math.ceil((elapsed * 200) / 1000) + 2 * 10);
    } finally {
      await Promise.all([a.close(), b.close()]);
      ra.disconnect();
      rb.disconnect();
    }
  });
  it('a burst through a second process is refused beyond the cap while the first keeps its share of idle slots, which it gives back after the longer hold', async () => {
    const [ra, rb] = [new Redis(redisUrl), new Redis(redisUrl)];
    const prefix = `mcpx-t${randomBytes(4).toString('hex')}:`;
    const a = new CallLimiter(ra, prefix, { slotHoldMs: 100, shareHoldMs: 3_000 });
    const b = new CallLimiter(rb, prefix, { slotHoldMs: 100, shareHoldMs: 3_000 });
    const key = `${prefix}limit:{s:c}:c`;
    // A cap of 16: a process's share of idle slots is 2.
    const cap = { maxConcurrency: 16, ratePerSecond: 0 };
    try {
      const calls = [];
      for (let i = 0; i < 16; i++) calls.push(await a.admit('s:c', cap, `a${i}`, 60_000));
      expect(calls.every((c) => c.ok)).toBe(true);
      expect(await b.admit('s:c', cap, 'b0', 60_000)).toMatchObject({ ok: false, reason: 'concurrency' });
      for (const c of calls) if (c.ok) c.release();
      // After the short hold a gives back all but its share: b gets the 14 others, and a burst
      // beyond them is refused.
      const got: Array<() => void> = [];
      await eventually(async () => {
        const r = await b.admit('s:c', cap, 'b', 60_000);
        if (r.ok) got.push(r.release);
        return r.ok;
      }, 5_000);
      const burst = [];
      for (let i = 0; i < 20; i++) burst.push(await b.admit('s:c', cap, `burst${i}`, 60_000));
      for (const r of burst) if (r.ok) got.push(r.release);
      expect(got.length).toBeLessThanOrEqual(14);
      expect(burst.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'concurrency')).toBe(true);
      expect(await ra.zcard(key)).toBeLessThanOrEqual(16);
      // a's share is reused at once, from what it holds (no round trip).
      const reused = a.admit('s:c', cap, 'a-again', 60_000);
      expect(reused).not.toBeInstanceOf(Promise);
      expect((reused as { ok: boolean }).ok).toBe(true);
      if ((reused as { ok: boolean }).ok) (reused as { release: () => void }).release();
      // After the longer hold the share goes back too, and b gets it.
      await eventually(async () => {
        const r = await b.admit('s:c', cap, 'b-late', 60_000);
        if (r.ok) got.push(r.release);
        return got.length >= 16;
      }, 10_000);
      expect(await ra.zcard(key)).toBe(16);
      for (const release of got) release();
    } finally {
      await Promise.all([a.close(), b.close()]);
      ra.disconnect();
      rb.disconnect();
    }
  });
  it('a slot leased while the limiter forgets idle scopes goes back to Redis when its call ends', async () => {
    // A loaded machine: the lease's reply comes after the limiter's upkeep (every 100 ms) has
    // looked at the scope. Before the fix the upkeep forgot the scope mid-lease, the call's slot
    // landed in a scope nobody swept, and it stayed in Redis until its ttl, refusing others.
    const redis = new Redis(redisUrl);
    const prefix = `mcpx-t${randomBytes(4).toString('hex')}:`;
    new CallLimiter(redis, prefix); // defines the scripts on this connection
    const slowRedis = redis as unknown as { mcpxLease: (...a: unknown[]) => Promise<unknown> };
    const lease = slowRedis.mcpxLease.bind(redis);
    slowRedis.mcpxLease = async (...a: unknown[]) => {
      const reply = await lease(...a);
      await new Promise((r) => setTimeout(r, 350));
      return reply;
    };
    const limiter = new CallLimiter(redis, prefix, { slotHoldMs: 100 });
    const cap = { maxConcurrency: 1, ratePerSecond: 0 };
    try {
      // A first scope keeps the upkeep's timer running while the second is leased.
      const other = await limiter.admit('s:other', cap, 'o', 60_000);
      if (other.ok) other.release();
      const call = await limiter.admit('s:c', cap, 'c1', 60_000);
      expect(call.ok).toBe(true);
      if (call.ok) call.release();
      const key = `${prefix}limit:{s:c}:c`;
      // Within the slot's 15 s ttl (a forgotten slot stays that long): 10 s leaves room for a starved box.
      await eventually(async () => (await redis.zcard(key)) === 0, 10_000);
      const next = await limiter.admit('s:c', cap, 'c2', 60_000);
      expect(next.ok).toBe(true);
      if (next.ok) next.release();
    } finally {
      await limiter.close();
      redis.disconnect();
    }
  });
});
