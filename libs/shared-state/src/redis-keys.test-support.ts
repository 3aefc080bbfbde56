import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A connection to the real Redis for the enclosing `describe`, closed after its tests. */
export function suiteRedis(): Redis {
  const redis = new Redis(redisUrl);
  afterAll(async () => {
    await redis.quit();
  });
  return redis;
}

/** `n` creations started at once, each settled: what was created (in order) and why the others were refused. */
export async function race<T>(
  n: number,
  create: (i: number) => Promise<T>,
): Promise<{ created: T[]; refused: unknown[] }> {
  const raced = await Promise.allSettled(Array.from({ length: n }, (_, i) => create(i)));
  return {
    created: raced.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    refused: raced.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])),
  };
}

/** A clock the test moves (no waiting) and a key prefix of the test's own. */
export function testClock(): { clock: { now: number }; prefix: string } {
  return { clock: { now: 1_700_000_000_000 }, prefix: `mcpx-t${randomBytes(4).toString('hex')}:` };
}

/** Every key under a prefix with its size (members of a set or hash, a string's length), to see that a refusal wrote nothing. */
export async function keysUnder(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      out[key] =
        type === 'zset' ? await redis.zcard(key) : type === 'hash' ? await redis.hlen(key) : await redis.strlen(key);
    }
  } while (cursor !== '0');
  return out;
}
