import type { Redis } from 'ioredis';
import { REDIS_NOW_MS, REFILL_BUCKET, withCommands } from './redis-lua.js';

/**
 * One token bucket per key, refilled at `rate` tokens per second up to `burst`, one token taken
 * per admission, in one round trip. Time comes from Redis (`TIME`), so instances with skewed
 * clocks share a bucket fairly. An idle bucket expires once it would be full again.
 *
 * KEYS[1] bucket hash {t = tokens, ts = last refill, ms}; ARGV: rate per second, burst.
 * Returns {1, 0} when admitted, {0, retryAfterMs} when not.
 */
const TAKE = `${REDIS_NOW_MS}${REFILL_BUCKET}
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = refill(KEYS[1], rate, burst, now)
if t < 1 then
  return {0, math.ceil((1 - t) * 1000 / rate)}
end
save(KEYS[1], t - 1, rate, burst, now)
return {1, 0}
`;

export interface RateLimit {
  /** Tokens per second; 0 = no limit. */
  ratePerSecond: number;
  /** Bucket size (at least one). */
  burst: number;
}

export type RateDecision = { ok: true; degraded?: true } | { ok: false; retryAfterMs: number };

/**
 * What a {@link RateLimiter} does when Redis fails its command: `refuse` throws the error (typed:
 * `isRedisUnavailable` tells an outage, no answer or a full Redis, from a fault), so the request
 * is refused; `admit` lets it through as `{ok: true, degraded: true}`. A limit that admits when it
 * cannot count is one an attacker widens by slowing Redis: `admit` is for a limit whose reason to
 * fail open is documented where it is made.
 */
export type WhenRedisFails = 'refuse' | 'admit';

export interface RateLimiterOptions {
  /** Called when Redis fails the command (either way). */
  onError?: (err: Error) => void;
  /**
   * Default `refuse`. The agent endpoint's failed-token limit says `admit` (its reason is on
   * `TokenFailures`: the tokens are 256-bit random, the limit protects the token table).
   */
  whenRedisFails?: WhenRedisFails;
}

type BucketRedis = Redis & { mcpxTakeToken(key: string, rate: number, burst: number): Promise<[number, number]> };

const ADMITTED: RateDecision = { ok: true };

/**
 * Rate limits shared by every instance through Redis (e.g. actions per signer, requests per
 * client address). Keys are `<prefix>rate:<kind>:{<key>}`. A Redis failure is reported to
 * `onError` and then refused or admitted, as `whenRedisFails` says.
 */
export class RateLimiter {
  private readonly redis: BucketRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly opts: RateLimiterOptions = {},
  ) {
    this.redis = withCommands<BucketRedis>(redis, { mcpxTakeToken: { keys: 1, lua: TAKE } });
  }

  /** Takes one token of `kind`'s bucket for `key`, or says how long until one is there. */
  async take(kind: string, key: string, limit: RateLimit): Promise<RateDecision> {
    if (!(limit.ratePerSecond > 0)) return ADMITTED;
    const burst = Math.max(1, Math.floor(limit.burst));
    try {
      const [ok, retryAfterMs] = await this.redis.mcpxTakeToken(
        `${this.prefix}rate:${kind}:{${key}}`,
        limit.ratePerSecond,
        burst,
      );
      return ok === 1 ? ADMITTED : { ok: false, retryAfterMs: Math.max(1, Number(retryAfterMs)) };
    } catch (err) {
      this.opts.onError?.(err as Error);
      if (this.opts.whenRedisFails !== 'admit') throw err;
      return { ok: true, degraded: true };
    }
  }
}
