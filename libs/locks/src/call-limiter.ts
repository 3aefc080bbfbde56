import type { Redis } from 'ioredis';

/**
 * Admission in one round trip: drop expired concurrency leases, check the cap, refill the token
 * bucket and take a token, then record the lease. Nothing is written unless the call is admitted.
 * Time comes from Redis (`TIME`), so instances with skewed clocks share one bucket fairly.
 *
 * KEYS[1] concurrency zset (member = lease id, score = lease expiry, ms)
 * KEYS[2] token bucket hash {t = tokens, ts = last refill, ms}
 * ARGV: maxConcurrency (0 = none), rate per second (0 = none), lease id, lease ttl ms, concurrency retry hint ms
 * Returns {1} or {0, reason, retryAfterMs}.
 */
const ADMIT = `
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local maxc = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
if maxc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if redis.call('ZCARD', KEYS[1]) >= maxc then
    return {0, 'concurrency', tonumber(ARGV[5])}
  end
end
if rate > 0 then
  local burst = math.max(1, rate)
  local h = redis.call('HMGET', KEYS[2], 't', 'ts')
  local tokens = tonumber(h[1])
  local ts = tonumber(h[2])
  if tokens == nil or ts == nil then
    tokens = burst
    ts = now
  end
  tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
  if tokens < 1 then
    return {0, 'rate', math.ceil((1 - tokens) * 1000 / rate)}
  end
  redis.call('HSET', KEYS[2], 't', tostring(tokens - 1), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[2], math.ceil(burst * 1000 / rate) + 1000)
end
if maxc > 0 then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {1}
`;

export interface CallLimits {
  /** Calls in flight at once per scope, across every process; 0 = no cap. */
  maxConcurrency: number;
  /** Calls per second per scope (a token bucket holding one second's worth); 0 = no limit. */
  ratePerSecond: number;
}

export type Admission =
  | { ok: true; /** Frees the concurrency lease (fire and forget; idempotent). */ release: () => void; degraded?: true }
  | { ok: false; reason: 'concurrency' | 'rate'; retryAfterMs: number };

export interface CallLimiterOptions {
  /** Hint returned when the concurrency cap is reached (a lease's end cannot be predicted). Default 200 ms. */
  concurrencyRetryMs?: number;
  /** Called when Redis fails: admission then fails open (the limit protects, it must not take calls down). */
  onError?: (err: Error) => void;
}

type AdmitReply = [1] | [0, 'concurrency' | 'rate', number];
type LimiterRedis = Redis & {
  mcpxAdmit(conc: string, rate: string, maxc: number, ratePerSecond: number, lease: string, ttlMs: number, retryMs: number): Promise<AdmitReply>;
};

const NOOP = (): void => {};
const ADMITTED: Admission = { ok: true, release: NOOP };

/**
 * A concurrency cap and a rate limit per scope (e.g. account and server) shared by every process
 * through Redis. A concurrency lease carries an expiry, so the lease of a process that died
 * mid-call frees itself; `release` ends it early. One round trip per admitted call (`EVALSHA`),
 * plus a fire-and-forget `ZREM` off the latency path when the call ends.
 */
export class CallLimiter {
  private readonly redis: LimiterRedis;
  private readonly retryMs: number;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly opts: CallLimiterOptions = {},
  ) {
    if (typeof (redis as unknown as Partial<LimiterRedis>).mcpxAdmit !== 'function') redis.defineCommand('mcpxAdmit', { numberOfKeys: 2, lua: ADMIT });
    this.redis = redis as unknown as LimiterRedis;
    this.retryMs = opts.concurrencyRetryMs ?? 200;
  }

  /** Admits one call of `scope` (a Redis hash tag keeps its keys on one cluster slot). */
  async admit(scope: string, limits: CallLimits, leaseId: string, leaseTtlMs: number): Promise<Admission> {
    const maxc = limits.maxConcurrency > 0 ? Math.floor(limits.maxConcurrency) : 0;
    const rate = limits.ratePerSecond > 0 ? limits.ratePerSecond : 0;
    if (maxc === 0 && rate === 0) return ADMITTED;
    const base = `${this.prefix}limit:{${scope}}`;
    const conc = `${base}:c`;
    let reply: AdmitReply;
    try {
      reply = await this.redis.mcpxAdmit(conc, `${base}:r`, maxc, rate, leaseId, Math.max(1, Math.ceil(leaseTtlMs)), this.retryMs);
    } catch (err) {
      this.opts.onError?.(err as Error);
      return { ok: true, release: NOOP, degraded: true };
    }
    if (reply[0] === 0) return { ok: false, reason: reply[1], retryAfterMs: Number(reply[2]) };
    if (maxc === 0) return ADMITTED;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.redis.zrem(conc, leaseId).catch((err: unknown) => this.opts.onError?.(err as Error));
      },
    };
  }
}
