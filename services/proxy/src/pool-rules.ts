import { ErrorCodes, WireError } from '@mcpx/contracts';

/**
 * The connection pool's decision rules (./connection-pool.ts), pure: when a full instance
 * refuses new work, which connection a call goes out on, what a connect's verdict was, when a
 * run is idle. Tested on their own in ./pool-rules.test.ts; the pool's suites run them against
 * real servers in both eras.
 */

/** How long a caller refused by a full instance is told to wait (another instance may take it at once). */
export const FULL_RETRY_MS = 1_000;

export type InstanceLimit = 'runs_per_proxy' | 'connections_per_proxy';

/**
 * The refusal of new work by an instance that holds `max` already (`max` 0 or less: no cap): a
 * retryable `rate_limited`, so the caller's client may send the run to another instance. What
 * the instance already holds goes on. Undefined: there is room.
 */
export function capRefusal(limit: InstanceLimit, held: number, max: number, what: string): WireError | undefined {
  if (!(max > 0) || held < max) return undefined;
  return new WireError(
    ErrorCodes.rateLimited,
    `this proxy instance holds its ${max} ${what}; retry (another instance may take it)`,
    { limit, max, retryAfterMs: FULL_RETRY_MS },
  );
}

/**
 * Which connection a call of a run goes out on (after the retry of a lost session dropped the
 * run's connection): `use` the run's own (open, or a handshake under way that the call waits
 * for); `replace` it when the server closed it under us; `open` one when the run has none yet (a
 * modern one may be shared with other runs, see {@link shareable}).
 */
export function slotStep(slot: { closed: boolean | undefined } | undefined): 'use' | 'replace' | 'open' {
  if (slot === undefined) return 'open';
  return slot.closed === true ? 'replace' : 'use';
}

/** A connection other runs may share: modern (no session on the server) and still open. A legacy connection is a session, kept per run. */
export function shareable(conn: { era: 'modern' | 'legacy'; closed: boolean }): boolean {
  return conn.era === 'modern' && !conn.closed;
}

/** What a connect's era verdict was, for `mcpx_proxy_era_verdicts_total{outcome}`. */
export function verdictOutcome(hadPrior: boolean, reprobed: boolean): 'probed' | 'reprobed' | 'reused' {
  if (!hadPrior) return 'probed';
  return reprobed ? 'reprobed' : 'reused';
}

/** A run whose connections the sweeper closes: no call in progress, and none since `cutoff`. */
export function runIsIdle(run: { active: number; lastUsed: number }, cutoff: number): boolean {
  return run.active === 0 && run.lastUsed < cutoff;
}
