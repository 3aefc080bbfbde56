/**
 * The call limiter's local rules (./call-limiter.ts), pure: what a process may admit from what it
 * holds, what it must lease from Redis first, how many rate tokens it leases at once and when it
 * refills ahead. Tested on their own in ./lease-rules.test.ts; the limiter's suite runs them
 * against a real Redis across processes.
 */

/** The most rate tokens one lease takes (so a process never sits on much of the bucket). */
export const MAX_TOKEN_BATCH = 64;
/** A batch smaller than this is exact only when leased on demand, so it is never refilled ahead. */
export const MIN_PREFETCH_BATCH = 4;

/**
 * Rate tokens one lease takes: about 50 ms of the rate, at most {@link MAX_TOKEN_BATCH}, at least
 * one (one at a time below 80 per second, which keeps a small rate exact), never more than the
 * bucket (one second's worth).
 */
export function tokenBatch(ratePerSecond: number): number {
  return Math.max(1, Math.min(MAX_TOKEN_BATCH, Math.floor(ratePerSecond / 20), Math.floor(ratePerSecond)));
}

/** What this process holds of one scope, as far as admission is concerned. */
export interface HeldForScope {
  /** Concurrency cap (0: none). */
  maxConcurrency: number;
  /** Rate per second (0: none). */
  ratePerSecond: number;
  /** Leased rate tokens not spent yet. */
  tokens: number;
  /** Leased concurrency slots no call is using. */
  freeSlots: number;
}

/** What a call must lease from Redis before it is admitted; both false: it is admitted from what the process holds, with no round trip. */
export function leaseNeeds(held: HeldForScope): { token: boolean; slot: boolean } {
  return { token: held.ratePerSecond > 0 && held.tokens < 1, slot: held.maxConcurrency > 0 && held.freeSlots === 0 };
}

/** Whether to lease the next batch of tokens in the background once a call spent one (`tokensLeft` after it). */
export function shouldPrefetch(tokensLeft: number, batch: number, prefetching: boolean): boolean {
  return batch >= MIN_PREFETCH_BATCH && tokensLeft < batch / 2 && !prefetching;
}

/** The share of a concurrency cap one process may keep idle for the longer hold: an eighth, rounded down. */
export const IDLE_SHARE_DIVISOR = 8;

/** How many freed slots of a cap of `maxConcurrency` one process may keep for the longer hold. */
export function idleShare(maxConcurrency: number): number {
  return Math.floor(maxConcurrency / IDLE_SHARE_DIVISOR);
}

/**
 * Free slots that stayed with this process longer than their hold since their call freed them:
 * they go back to Redis, so another process can have them. The others are kept for this
 * process's next calls. The newest `share.count` (the end of the list, which calls reuse first)
 * are kept up to `share.holdMs`, the rest up to `holdMs`: on a busy box a caller's next call
 * comes back later than a short hold, and without the share each call would pay a lease.
 */
export function splitIdleSlots<T extends { since: number }>(
  free: readonly T[],
  now: number,
  holdMs: number,
  share: { count: number; holdMs: number } = { count: 0, holdMs },
): { idle: T[]; kept: T[] } {
  const idle: T[] = [];
  const kept: T[] = [];
  const firstShared = free.length - share.count;
  free.forEach((f, i) => {
    const hold = i >= firstShared ? Math.max(holdMs, share.holdMs) : holdMs;
    (now - f.since >= hold ? idle : kept).push(f);
  });
  return { idle, kept };
}
