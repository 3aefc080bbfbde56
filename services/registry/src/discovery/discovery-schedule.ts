/** Re-probe backoff: `baseMs · 2^(failures-1)`, capped at `maxMs`, ±20 % jitter. */
export const REPROBE_BACKOFF = { baseMs: 5_000, maxMs: 15 * 60_000, jitter: 0.2 } as const;

/** When to probe a failing server again: exponential in its failures in a row, with jitter. */
export function nextProbeDelayMs(
  failures: number,
  random: () => number = Math.random,
  baseMs: number = REPROBE_BACKOFF.baseMs,
): number {
  const exp = Math.min(REPROBE_BACKOFF.maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exp * (1 - REPROBE_BACKOFF.jitter + 2 * REPROBE_BACKOFF.jitter * random()));
}

/** Re-listing on expiry: never sooner than `floorMs` after a use, and later by up to `jitter` (spreads instances and servers). */
export const RELIST = { floorMs: 30_000, jitter: 0.1 } as const;

/**
 * When a list in use is listed again: at its `ttlMs` (the server's hint), not before the floor,
 * jittered upwards only (a list is never re-listed before it expires).
 */
export function relistDelayMs(
  ttlMs: number,
  random: () => number = Math.random,
  floorMs: number = RELIST.floorMs,
): number {
  return Math.round(Math.max(floorMs, ttlMs) * (1 + RELIST.jitter * random()));
}
