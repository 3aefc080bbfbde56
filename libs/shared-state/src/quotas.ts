import { randomBytes } from 'node:crypto';
import { REDIS_NOW_MS, withCommands } from './redis-lua.js';
import type { Redis } from 'ioredis';
import { isRedisUnavailable } from './redis-options.js';
import { UntilAnswered } from './until-answered.js';

/**
 * Takes a lease under a cap in one round trip: drop expired leases, refuse when `max` are held,
 * else add this one. KEYS[1] the scope's zset (member = lease id, score = expiry, ms);
 * ARGV: max, lease id, ttl ms. Returns {1, 0} when taken, {0, ms until the oldest lease expires}.
 */
const ACQUIRE = `${REDIS_NOW_MS}local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, math.max(1, math.ceil(tonumber(oldest[2]) - now))}
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, 0}
`;

/** Extends a lease still held to now + ttl. ARGV: ttl ms, lease id. */
const RENEW = `${REDIS_NOW_MS}local ttl = tonumber(ARGV[1])
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
return n
`;

/** A held lease: renewed in the background while held, freed by `release` (idempotent). */
export interface QuotaLease {
  release(): void;
}

export type QuotaDecision = { ok: true; lease: QuotaLease } | { ok: false; held: number; retryAfterMs: number };

type LeaseRedis = Redis & {
  mcpxQuotaAcquire(key: string, max: number, id: string, ttlMs: number): Promise<[number, number]>;
  mcpxQuotaRenew(key: string, ttlMs: number, id: string): Promise<number>;
};

export interface LeaseQuotaOptions {
  /** A lease's expiry in Redis, renewed every third of it while held: a process that dies frees its leases within this. Default 30 s. */
  ttlMs?: number;
  /**
   * Called when Redis fails. An acquire that Redis did not answer is refused (it throws), never
   * admitted: a quota that admits when it cannot count is one an attacker widens by slowing Redis.
   */
  onError?: (err: Error) => void;
}

const NOOP_LEASE: QuotaLease = { release: () => {} };

/**
 * "At most N at once" per scope (e.g. event streams per account, discoveries in flight per
 * account), held across every instance through Redis: each holder has a lease in the scope's
 * sorted set, renewed while held and released when done; a crashed holder's lease expires within
 * `ttlMs`. Keys are `<prefix>quota:<kind>:{<scope>}`.
 *
 * Fails closed: an acquire whose command fails throws that error, typed (a
 * `RedisUnavailableError` for no answer, the `OOM` reply of a full Redis: `isRedisUnavailable`
 * tells both; any other reply error is a fault), and takes nothing. A command that timed out may
 * still run (the client sends it again on its reconnect; a stalled Redis runs it late): its lease,
 * like one whose release got no answer, is removed again and again until Redis answers, so it
 * does not hold one of the scope's places after Redis returns (see `UntilAnswered`).
 */
export class LeaseQuota {
  private readonly redis: LeaseRedis;
  private readonly ttlMs: number;
  private readonly held = new Map<string, { key: string; id: string }>();
  /** Leases let go of (an acquire or a release that got no answer), removed once Redis answers. */
  private readonly letGone = new UntilAnswered();
  private timer: NodeJS.Timeout | undefined;
  private readonly owner = randomBytes(6).toString('hex');
  private seq = 0;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly opts: LeaseQuotaOptions = {},
  ) {
    this.redis = withCommands<LeaseRedis>(redis, {
      mcpxQuotaAcquire: { keys: 1, lua: ACQUIRE },
      mcpxQuotaRenew: { keys: 1, lua: RENEW },
    });
    this.ttlMs = opts.ttlMs ?? 30_000;
  }

  /**
   * Takes one of `max` leases of `kind` for `scope` (0 = no cap), or says how many are held and
   * when one may free; throws, taking nothing, when Redis does not answer (see the class).
   */
  async acquire(kind: string, scope: string, max: number): Promise<QuotaDecision> {
    if (!(max > 0)) return { ok: true, lease: NOOP_LEASE };
    const key = `${this.prefix}quota:${kind}:{${scope}}`;
    const id = `${this.owner}:${this.seq++}`;
    // Sent first on the same connection, so the removals run before this acquire counts.
    if (this.letGone.size > 0) this.letGone.sendNow();
    let reply: [number, number];
    try {
      reply = await this.redis.mcpxQuotaAcquire(key, Math.floor(max), id, this.ttlMs);
    } catch (err) {
      this.opts.onError?.(err as Error);
      this.letGo(key, id);
      throw err;
    }
    if (reply[0] !== 1) return { ok: false, held: Math.floor(max), retryAfterMs: Number(reply[1]) };
    const handle = `${key} ${id}`;
    this.held.set(handle, { key, id });
    this.timer ??= setInterval(() => this.renewAll(), Math.max(50, Math.floor(this.ttlMs / 3))).unref();
    let released = false;
    return {
      ok: true,
      lease: {
        release: () => {
          if (released) return;
          released = true;
          this.held.delete(handle);
          if (this.held.size === 0 && this.timer !== undefined) {
            clearInterval(this.timer);
            this.timer = undefined;
          }
          this.redis.zrem(key, id).catch((err: unknown) => {
            this.opts.onError?.(err as Error);
            if (isRedisUnavailable(err)) this.letGo(key, id);
          });
        },
      },
    };
  }

  /** How many leases of `kind` for `scope` are held now (expired ones not counted). */
  async count(kind: string, scope: string): Promise<number> {
    const key = `${this.prefix}quota:${kind}:{${scope}}`;
    const t = await this.redis.time();
    const now = Number(t[0]) * 1000 + Math.floor(Number(t[1]) / 1000);
    return this.redis.zcount(key, `(${now}`, '+inf');
  }

  /** Removes lease `id` of `key` once Redis answers (see {@link letGone}). */
  private letGo(key: string, id: string): void {
    this.letGone.add(`${key} ${id}`, () => this.redis.zrem(key, id));
  }

  private renewAll(): void {
    for (const { key, id } of this.held.values()) {
      this.redis.mcpxQuotaRenew(key, this.ttlMs, id).catch((err: unknown) => this.opts.onError?.(err as Error));
    }
  }
}
