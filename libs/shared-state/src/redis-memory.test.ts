import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { redisMemoryProblems, redisMemorySettings } from './redis-memory.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('the memory bound of Redis', () => {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });

  it('reads maxmemory and its policy from INFO (real Redis)', async () => {
    const s = await redisMemorySettings(redis);
    expect(s).toBeDefined();
    expect(s!.maxmemory).toBeGreaterThanOrEqual(0);
    expect(s!.policy).toMatch(/^[a-z-]+$/);
  });

  it('says what is wrong: no bound, or a policy that evicts; nothing for a bound without eviction', () => {
    expect(redisMemoryProblems({ maxmemory: 256 * 1024 * 1024, policy: 'noeviction' })).toEqual([]);
    expect(redisMemoryProblems({ maxmemory: 0, policy: 'noeviction' })).toEqual([
      expect.stringContaining('no maxmemory'),
    ]);
    expect(redisMemoryProblems({ maxmemory: 1024, policy: 'allkeys-lru' })).toEqual([
      expect.stringContaining('allkeys-lru'),
    ]);
  });
});
