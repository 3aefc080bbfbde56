import type { Redis } from 'ioredis';

/**
 * One token bucket per key, refilled at `rate` tokens per second up to `burst`, one token taken
 * per admission, in one round trip. Time comes from Redis (`TIME`), so instances with skewed
 * clocks share a bucket fairly. An idle bucket expires once it would be full again.
 *
 * KEYS[1] bucket hash {t = tokens, ts = last refill, ms}; ARGV: rate per second, burst.
 * Returns {1, 0} when admitted, {0, retryAfterMs} when not.
 */
const TAKE = `
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 't', 'ts')
local t = tonumber(h[1])
local ts = tonumber(h[2])
if t == nil or ts == nil then
  t = burst
  ts = now
end
t = math.min(burst, t + math.max(0, now - ts) * rate / 1000)
if t < 1 then
  return {0, math.ceil((1 - t) * 1000 / rate)}
end
redis.call('HSET', KEYS[1], 't', tostring(t - 1), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {1, 0}
`;

export interface RateLimit {
  /** Tokens per second; 0 = no limit. */
  ratePerSecond: number;
  /** Bucket size (at least one). */
  burst: number;
}

export type RateDecision = { ok: true; degraded?: true } | { ok: false; retryAfterMs: number };

type BucketRedis = Redis & { mcpxTakeToken(key: string, rate: number, burst: number): Promise<[number, number]> };

const ADMITTED: RateDecision = { ok: true };

/**
 * Rate limits shared by every instance through Redis (e.g. actions per signer, requests per
 * client address). Keys are `<prefix>rate:<kind>:{<key>}`. A Redis failure admits (reported to
 * `onError`): a limit protects the service, it must not take it down.
 */
export class RateLimiter {
  private readonly redis: BucketRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly opts: { onError?: (err: Error) => void } = {},
  ) {
    if (typeof (redis as unknown as Partial<BucketRedis>).mcpxTakeToken !== 'function') redis.defineCommand('mcpxTakeToken', { numberOfKeys: 1, lua: TAKE });
    this.redis = redis as unknown as BucketRedis;
  }

  /** Takes one token of `kind`'s bucket for `key`, or says how long until one is there. */
  async take(kind: string, key: string, limit: RateLimit): Promise<RateDecision> {
    if (!(limit.ratePerSecond > 0)) return ADMITTED;
    const burst = Math.max(1, Math.floor(limit.burst));
    try {
      const [ok, retryAfterMs] = await this.redis.mcpxTakeToken(`${this.prefix}rate:${kind}:{${key}}`, limit.ratePerSecond, burst);
      return ok === 1 ? ADMITTED : { ok: false, retryAfterMs: Math.max(1, Number(retryAfterMs)) };
    } catch (err) {
      this.opts.onError?.(err as Error);
      return { ok: true, degraded: true };
    }
  }
}
