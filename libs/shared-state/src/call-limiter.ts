import { randomBytes } from 'node:crypto';
import { idleShare, leaseNeeds, shouldPrefetch, splitIdleSlots, tokenBatch, type HeldForScope } from './lease-rules.js';
import { REDIS_NOW_MS, REFILL_BUCKET, withCommands } from './redis-lua.js';
import type { Redis } from 'ioredis';

/**
 * Leases in one round trip: drop expired slots, lease up to `wantSlots` concurrency slots (at
 * least one, when any is wanted) under the cap, refill the token bucket and take up to
 * `wantTokens` tokens (at least one, when any is wanted). Nothing is taken unless every wanted
 * kind gets at least one. Time comes from Redis (`TIME`), so instances with skewed clocks share
 * one bucket fairly.
 *
 * KEYS[1] concurrency zset (member = slot id, score = slot expiry, ms)
 * KEYS[2] token bucket hash {t = tokens, ts = last refill, ms}
 * ARGV: maxConcurrency (0 = none), rate per second (0 = none), slot id prefix, slot ttl ms,
 *       concurrency retry hint ms, slots wanted, tokens wanted, first slot number
 * Returns {slots, tokens} or {-1, reason, retryAfterMs}.
 */
const LEASE = `${REDIS_NOW_MS}${REFILL_BUCKET}
local maxc = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
local wantS = tonumber(ARGV[6])
local wantT = tonumber(ARGV[7])
local slots = 0
if maxc > 0 and wantS > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  slots = math.min(wantS, maxc - redis.call('ZCARD', KEYS[1]))
  if slots < 1 then
    return {-1, 'concurrency', tonumber(ARGV[5])}
  end
end
local tokens = 0
if rate > 0 and wantT > 0 then
  local burst = math.max(1, rate)
  local t = refill(KEYS[2], rate, burst, now)
  if t < 1 then
    return {-1, 'rate', math.ceil((1 - t) * 1000 / rate)}
  end
  tokens = math.min(wantT, math.floor(t))
  save(KEYS[2], t - tokens, rate, burst, now)
end
if slots > 0 then
  local first = tonumber(ARGV[8])
  for i = 0, slots - 1 do
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[3] .. (first + i))
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {slots, tokens}
`;

/** Extends held slots (those still present) to now + ttl. ARGV: ttl ms, slot ids… */
const RENEW = `${REDIS_NOW_MS}local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`;

/** Gives unspent tokens back to the bucket (never above its burst). ARGV: tokens, rate. */
const GIVE_BACK = `
local t = tonumber(redis.call('HGET', KEYS[1], 't'))
if t == nil then return 0 end
local burst = math.max(1, tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 't', tostring(math.min(burst, t + tonumber(ARGV[1]))))
return 1
`;

export interface CallLimits {
  /** Calls in flight at once per scope, across every process; 0 = no cap. */
  maxConcurrency: number;
  /** Calls per second per scope (a token bucket holding one second's worth); 0 = no limit. */
  ratePerSecond: number;
}

export type Admission =
  | { ok: true; /** Frees the call's concurrency slot (idempotent). */ release: () => void; degraded?: true }
  | { ok: false; reason: 'concurrency' | 'rate'; retryAfterMs: number };

export interface CallLimiterOptions {
  /** Hint returned when the concurrency cap is reached (a lease's end cannot be predicted). Default 200 ms. */
  concurrencyRetryMs?: number;
  /** Called when Redis fails: admission then fails open (the limit protects, it must not take calls down). */
  onError?: (err: Error) => void;
  /** How long a slot freed by a call stays with this process for its next call before it goes back to Redis. Default 200 ms. */
  slotHoldMs?: number;
  /** How long the process's share of freed slots (an eighth of the cap, the newest) stays with it. Default 1 s. */
  shareHoldMs?: number;
  /** A held slot's expiry in Redis, renewed while held: a process that dies frees its slots within this. Default 15 s. */
  slotTtlMs?: number;
  /** How long leased rate tokens may wait for a call before they are given back. Default 1 s. */
  tokenTtlMs?: number;
}

type Refusal = [-1, 'concurrency' | 'rate', number];
type LeaseReply = [number, number] | Refusal;
const refused = (r: LeaseReply): r is Refusal => r[0] === -1;
type LimiterRedis = Redis & {
  mcpxLease(
    conc: string,
    rate: string,
    maxc: number,
    ratePerSecond: number,
    slotPrefix: string,
    ttlMs: number,
    retryMs: number,
    wantSlots: number,
    wantTokens: number,
    first: number,
  ): Promise<LeaseReply>;
  mcpxRenew(conc: string, ttlMs: number, ...slots: string[]): Promise<number>;
  mcpxGiveBack(rate: string, tokens: number, ratePerSecond: number): Promise<number>;
};

interface Call {
  slot: string;
  deadline: number;
  released: boolean;
}

/** What this process holds of one scope. */
interface Scope {
  conc: string;
  rate: string;
  maxc: number;
  ratePerSecond: number;
  /** Leased slots no call is using, and when each was freed. */
  free: Array<{ slot: string; since: number }>;
  /** Calls admitted with a slot and not yet released. */
  calls: Set<Call>;
  tokens: number;
  tokensExpire: number;
  /** A background token lease in flight. */
  prefetching: boolean;
  /** Leases of calls waiting on Redis: the scope is kept while any is in flight (its reply lands here). */
  leasing: number;
  /** A lease of tokens in flight (a call's or a prefetch): a call that needs only a token waits for it. */
  tokensComing: Promise<unknown> | undefined;
}

const NOOP = (): void => {};
const ADMITTED: Admission = { ok: true, release: NOOP };

/**
 * A concurrency cap and a rate limit per scope (e.g. account and server) shared by every process
 * through Redis, with the round trip off the common path:
 * - concurrency: a process leases slots from Redis one at a time, when it has no free one, and
 *   keeps a slot its call freed for `slotHoldMs` so the next call reuses it without a round trip;
 *   its share of freed slots (an eighth of the cap, the newest) it keeps for `shareHoldMs`, since
 *   on a busy box a caller's next call comes later than the short hold and would pay a lease each
 *   time. The cap holds exactly across processes (a slot is in Redis while any process holds it);
 *   a freed slot can stay with its process up to `slotHoldMs`, or up to `shareHoldMs` for its
 *   share, before another process can get it (the slack: each other process may keep an eighth
 *   of the cap idle for a second while this one is refused; the refusal's retry hint covers the
 *   short hold). Held slots are renewed in Redis; a process that dies
 *   frees them within `slotTtlMs`. A call not released within its lease ttl frees its slot.
 * - rate: a process leases tokens in batches of about 50 ms of the rate (at most 64; one at a
 *   time below 80/s, which is exact) and spends them locally, refilling ahead in the background;
 *   a call that needs a token while a lease is in flight waits for it (no herd of leases).
 *   Tokens are taken from the shared bucket when leased, so the count over time is exact; a call
 *   may run up to `tokenTtlMs` after its token was taken, so a one-second window can see at most
 *   one batch per process more than the bucket allows. Unspent tokens go back after `tokenTtlMs`.
 */
export class CallLimiter {
  private readonly redis: LimiterRedis;
  private readonly retryMs: number;
  private readonly holdMs: number;
  private readonly shareHoldMs: number;
  private readonly slotTtlMs: number;
  private readonly tokenTtlMs: number;
  private readonly scopes = new Map<string, Scope>();
  private readonly owner = `${randomBytes(6).toString('hex')}:`;
  private slotSeq = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastRenew = 0;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly opts: CallLimiterOptions = {},
  ) {
    this.redis = withCommands<LimiterRedis>(redis, {
      mcpxLease: { keys: 2, lua: LEASE },
      mcpxRenew: { keys: 1, lua: RENEW },
      mcpxGiveBack: { keys: 1, lua: GIVE_BACK },
    });
    this.retryMs = opts.concurrencyRetryMs ?? 200;
    this.holdMs = opts.slotHoldMs ?? 200;
    this.shareHoldMs = opts.shareHoldMs ?? 1_000;
    this.slotTtlMs = opts.slotTtlMs ?? 15_000;
    this.tokenTtlMs = opts.tokenTtlMs ?? 1_000;
  }

  /**
   * Admits one call of `scope` (a Redis hash tag keeps its keys on one cluster slot). `leaseId`
   * names the call (kept for callers; slots are named by the process); a call not released
   * within `leaseTtlMs` frees its slot.
   */
  admit(scope: string, limits: CallLimits, _leaseId: string, leaseTtlMs: number): Promise<Admission> | Admission {
    const maxc = limits.maxConcurrency > 0 ? Math.floor(limits.maxConcurrency) : 0;
    const rate = limits.ratePerSecond > 0 ? limits.ratePerSecond : 0;
    if (maxc === 0 && rate === 0) return ADMITTED;
    const s = this.scope(scope, maxc, rate);
    const now = Date.now();
    if (rate > 0 && s.tokens > 0 && s.tokensExpire <= now) this.giveBack(s);
    if (maxc > 0 && s.free.length === 0) this.sweepCalls(s, now);
    const need = leaseNeeds(this.held(s));
    if (!need.token && !need.slot) return this.take(s, now, leaseTtlMs);
    // Tokens already on their way: wait for them instead of leasing a batch more. On a loaded box
    // a lease's round trip is long, and every call arriving meanwhile leased its own batch (a
    // herd of leases, then a heap of tokens given back unspent a second later).
    if (need.token && !need.slot && s.tokensComing !== undefined)
      return s.tokensComing.then(() => this.admit(scope, limits, _leaseId, leaseTtlMs));
    return this.lease(s, need.slot, need.token, leaseTtlMs);
  }

  /** Gives back what this process holds (slots and tokens); admission keeps working afterwards. */
  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    const jobs: Array<Promise<unknown>> = [];
    for (const s of this.scopes.values()) {
      if (s.free.length > 0) jobs.push(this.redis.zrem(s.conc, ...s.free.map((f) => f.slot)));
      s.free = [];
      if (s.tokens > 0) jobs.push(this.redis.mcpxGiveBack(s.rate, s.tokens, s.ratePerSecond));
      s.tokens = 0;
    }
    await Promise.all(jobs.map((j) => j.catch(() => undefined)));
  }

  private scope(key: string, maxc: number, rate: number): Scope {
    let s = this.scopes.get(key);
    if (s === undefined) {
      const base = `${this.prefix}limit:{${key}}`;
      s = {
        conc: `${base}:c`,
        rate: `${base}:r`,
        maxc,
        ratePerSecond: rate,
        free: [],
        calls: new Set(),
        tokens: 0,
        tokensExpire: 0,
        prefetching: false,
        leasing: 0,
        tokensComing: undefined,
      };
      this.scopes.set(key, s);
      this.timer ??= setInterval(() => this.maintain(), Math.min(100, this.holdMs)).unref();
    } else if (s.maxc !== maxc || s.ratePerSecond !== rate) {
      // New limits: held slots stay (they are in Redis either way); tokens follow the new rate.
      if (s.tokens > 0) this.giveBack(s);
      s.maxc = maxc;
      s.ratePerSecond = rate;
    }
    return s;
  }

  private held(s: Scope): HeldForScope {
    return { maxConcurrency: s.maxc, ratePerSecond: s.ratePerSecond, tokens: s.tokens, freeSlots: s.free.length };
  }

  /** Admits from what the process holds (a free slot and a token, as the limits need). */
  private take(s: Scope, now: number, leaseTtlMs: number): Admission {
    if (s.ratePerSecond > 0) {
      s.tokens--;
      const batch = tokenBatch(s.ratePerSecond);
      if (shouldPrefetch(s.tokens, batch, s.prefetching)) this.prefetch(s, batch);
    }
    if (s.maxc === 0) return ADMITTED;
    const slot = s.free.pop()!.slot;
    const call: Call = { slot, deadline: now + leaseTtlMs, released: false };
    s.calls.add(call);
    return {
      ok: true,
      release: () => {
        if (call.released) return;
        call.released = true;
        s.calls.delete(call);
        s.free.push({ slot, since: Date.now() });
      },
    };
  }

  private async lease(s: Scope, needSlot: boolean, needToken: boolean, leaseTtlMs: number): Promise<Admission> {
    const wantTokens = needToken ? tokenBatch(s.ratePerSecond) : 0;
    const first = this.slotSeq;
    if (needSlot) this.slotSeq++;
    let reply: LeaseReply;
    s.leasing++;
    const leased = this.leaseFrom(s, s.maxc, needSlot ? 1 : 0, wantTokens, first);
    if (needToken) this.expectTokens(s, leased);
    try {
      reply = await leased;
    } catch (err) {
      this.opts.onError?.(err as Error);
      // The lease may have run with its reply lost (a command timeout): its slot is nobody's.
      if (needSlot) this.redis.zrem(s.conc, `${this.owner}${first}`).catch(() => undefined);
      return { ok: true, release: NOOP, degraded: true };
    } finally {
      s.leasing--;
    }
    if (refused(reply)) return { ok: false, reason: reply[1], retryAfterMs: Number(reply[2]) };
    const now = Date.now();
    if (reply[0] > 0) s.free.push({ slot: `${this.owner}${first}`, since: now });
    if (reply[1] > 0) {
      s.tokens += reply[1];
      s.tokensExpire = now + this.tokenTtlMs;
    }
    // Another call may have taken what arrived meanwhile: admit only from what is there.
    const need = leaseNeeds(this.held(s));
    if (need.token || need.slot) return this.lease(s, need.slot, need.token, leaseTtlMs);
    return this.take(s, now, leaseTtlMs);
  }

  /** The lease script's round trip for `s` (see LEASE). */
  private leaseFrom(s: Scope, maxc: number, slots: number, tokens: number, first: number): Promise<LeaseReply> {
    const { owner, slotTtlMs, retryMs } = this;
    return this.redis.mcpxLease(s.conc, s.rate, maxc, s.ratePerSecond, owner, slotTtlMs, retryMs, slots, tokens, first);
  }

  /** Marks `leased` as the scope's tokens on their way until it settles (see {@link admit}). */
  private expectTokens(s: Scope, leased: Promise<unknown>): void {
    const coming = leased.then(NOOP, NOOP);
    s.tokensComing = coming;
    void coming.then(() => {
      if (s.tokensComing === coming) s.tokensComing = undefined;
    });
  }

  private prefetch(s: Scope, batch: number): void {
    s.prefetching = true;
    const leased = this.leaseFrom(s, 0, 0, batch, 0);
    this.expectTokens(s, leased);
    leased
      .then(
        (reply) => {
          if (!refused(reply) && reply[1] > 0) {
            s.tokens += reply[1];
            s.tokensExpire = Date.now() + this.tokenTtlMs;
          }
        },
        (err: unknown) => this.opts.onError?.(err as Error),
      )
      .finally(() => {
        s.prefetching = false;
      });
  }

  /** Frees the slots of calls past their lease ttl (their holder never released them). */
  private sweepCalls(s: Scope, now: number): void {
    for (const c of s.calls) {
      if (c.deadline <= now) {
        c.released = true;
        s.calls.delete(c);
        s.free.push({ slot: c.slot, since: now });
      }
    }
  }

  private giveBack(s: Scope): void {
    const n = s.tokens;
    s.tokens = 0;
    this.redis.mcpxGiveBack(s.rate, n, s.ratePerSecond).catch((err: unknown) => this.opts.onError?.(err as Error));
  }

  /** Returns idle slots and stale tokens, renews held slots, forgets idle scopes. */
  private maintain(): void {
    const now = Date.now();
    const renew = now - this.lastRenew >= this.slotTtlMs / 3;
    if (renew) this.lastRenew = now;
    for (const [key, s] of this.scopes) {
      if (s.calls.size > 0) this.sweepCalls(s, now);
      const share = { count: idleShare(s.maxc), holdMs: this.shareHoldMs };
      const { idle, kept } = splitIdleSlots(s.free, now, this.holdMs, share);
      if (idle.length > 0) {
        s.free = kept;
        this.redis.zrem(s.conc, ...idle.map((f) => f.slot)).catch((err: unknown) => this.opts.onError?.(err as Error));
      }
      if (s.tokens > 0 && s.tokensExpire <= now) this.giveBack(s);
      if (renew && (s.calls.size > 0 || s.free.length > 0)) {
        const held = [...s.free.map((f) => f.slot), ...[...s.calls].map((c) => c.slot)];
        this.redis
          .mcpxRenew(s.conc, this.slotTtlMs, ...held)
          .catch((err: unknown) => this.opts.onError?.(err as Error));
      }
      // A scope with a lease in flight stays: forgotten, the slot its reply brings would be held by
      // a call no sweep sees, and never go back to Redis before its ttl (refusing others meanwhile).
      if (s.calls.size === 0 && s.free.length === 0 && s.tokens === 0 && !s.prefetching && s.leasing === 0)
        this.scopes.delete(key);
    }
    if (this.scopes.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
