import { isRedisUnavailable, type LeaseQuota, type QuotaDecision } from '@mcpx/shared-state';
import { quotaExceeded } from '../shared/quotas.js';

/** The lease kind of a discovery in flight (`<prefix>quota:discoveries:{<account>}`). */
const KIND = 'discoveries';
/** How often a discovery waiting for one of its account's places asks again. */
const POLL_MS = 100;
/**
 * Acquires in a row that Redis does not answer before the discovery is refused: one that timed
 * out because this process stalled (a reply read after the command's timeout) is asked again, an
 * outage is not waited out.
 */
const UNANSWERED_TRIES = 3;

/**
 * Runs `fn` holding one of the account's `max` places for discoveries in flight across every
 * registry instance (a Redis lease, renewed while held, freed when done; a crashed instance's
 * expires). A discovery that finds them all held waits, asking again every ~100 ms, for at most
 * `maxWaitMs`; then it is refused with `quota_exceeded` (`discoveries_per_account`). Redis not
 * answering: the discovery is not run uncounted; after {@link UNANSWERED_TRIES} acquires in a row
 * without an answer (or past `maxWaitMs`) it fails with Redis's typed error, which the actions
 * answer as `unavailable` (dependency `redis`, retryable).
 */
export async function withDiscoveryLease<T>(
  leases: LeaseQuota,
  account: string,
  max: number,
  maxWaitMs: number,
  fn: () => Promise<T>,
): Promise<T> {
  const started = Date.now();
  let unanswered = 0;
  for (;;) {
    let decision: QuotaDecision;
    try {
      decision = await leases.acquire(KIND, account, max);
      unanswered = 0;
    } catch (err) {
      if (!isRedisUnavailable(err) || ++unanswered >= UNANSWERED_TRIES || Date.now() - started >= maxWaitMs) throw err;
      await pause();
      continue;
    }
    if (decision.ok) {
      try {
        return await fn();
      } finally {
        decision.lease.release();
      }
    }
    if (Date.now() - started >= maxWaitMs) {
      throw quotaExceeded(
        'name',
        'discoveries_per_account',
        max,
        `the account has ${max} discoveries in flight across the registry's instances; try again in a moment`,
        POLL_MS,
      );
    }
    await pause();
  }
}

/** The wait before asking again, with a little jitter: waiting discoveries of one account do not ask in lockstep. */
function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, POLL_MS + Math.floor(Math.random() * POLL_MS)));
}
