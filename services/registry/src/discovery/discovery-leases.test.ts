import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { FailFastRedis, LeaseQuota, RedisUnavailableError } from '@mcpx/shared-state';
import { withDiscoveryLease } from './discovery-leases.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = (): string => `mcpx-t${randomBytes(4).toString('hex')}:`;

describe('discovery leases when Redis does not answer (real Redis)', () => {
  const clients: FailFastRedis[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });

  async function client(): Promise<FailFastRedis> {
    const c = new FailFastRedis(redisUrl);
    c.on('error', () => undefined);
    clients.push(c);
    await c.connect();
    return c;
  }

  it('Redis gone: the discovery is refused with the typed outage, never run uncounted', async () => {
    const redis = await client();
    const leases = new LeaseQuota(redis, prefix());
    redis.disconnect();
    let ran = 0;
    const err = await withDiscoveryLease(leases, 'acct', 2, 60_000, async () => ++ran).then(
      (v) => v,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect(ran).toBe(0);
  });

  it('one acquire without an answer (a blip) is asked again: the discovery runs, under a lease', async () => {
    const redis = await client();
    const p = prefix();
    const leases = new LeaseQuota(redis, p);
    redis.disconnect();
    // Back before the next ask (~100–200 ms later).
    setTimeout(() => void redis.connect().catch(() => undefined), 20);
    const held = await withDiscoveryLease(leases, 'acct', 2, 60_000, () => leases.count('discoveries', 'acct'));
    expect(held).toBe(1);
    expect(await leases.count('discoveries', 'acct')).toBe(0);
  });
});
