import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { SingleFlight } from './single-flight.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Two instances (two Redis connections, as two processes would hold) sharing one prefix. */
describe('SingleFlight across instances (real Redis)', () => {
  const a = new Redis(redisUrl);
  const b = new Redis(redisUrl);
  afterAll(async () => {
    await Promise.all([a.quit(), b.quit()]);
  });
  const prefix = `mcpx-t${randomBytes(4).toString('hex')}:`;

  it('keeps the lock while slow work outlives its TTL: another instance follows, it does not lead again', async () => {
    const first = new SingleFlight(a, prefix);
    const second = new SingleFlight(b, prefix);
    const opts = { ttlMs: 1_000, waitMs: 10_000, pollMs: 50 };
    let leads = 0;
    const slow = first.run(
      'work',
      opts,
      async () => {
        leads++;
        await sleep(3_000);
        return 'led';
      },
      async () => 'followed',
    );
    // Well past the TTL the first took the lock with: without renewal it would have expired.
    await sleep(1_500);
    const late = await second.run(
      'work',
      opts,
      async () => {
        leads++;
        return 'led again';
      },
      async () => 'followed',
    );
    expect(await slow).toBe('led');
    expect(late).toBe('followed');
    expect(leads).toBe(1);
  });

  it('exclusive waits for the holder, then runs its own work; the lock is free afterwards', async () => {
    const first = new SingleFlight(a, prefix);
    const second = new SingleFlight(b, prefix);
    const order: string[] = [];
    const held = first.run(
      'ex',
      { ttlMs: 1_000 },
      async () => {
        await sleep(1_500);
        order.push('refresh');
      },
      async () => undefined,
    );
    await sleep(100);
    await second.exclusive('ex', { ttlMs: 1_000, waitMs: 10_000 }, async () => {
      order.push('exchange');
    });
    await held;
    expect(order).toEqual(['refresh', 'exchange']);
    expect(await a.exists(`${prefix}lock:ex`)).toBe(0);
  });
});
