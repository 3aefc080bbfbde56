import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

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
