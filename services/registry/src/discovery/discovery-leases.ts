import type { LeaseQuota } from '@mcpx/shared-state';
import { quotaExceeded } from '../shared/quotas.js';

/** The lease kind of a discovery in flight (`<prefix>quota:discoveries:{<account>}`). */
const KIND = 'discoveries';
/** How often a discovery waiting for one of its account's places asks again. */
const POLL_MS = 100;

/**
 * Runs `fn` holding one of the account's `max` places for discoveries in flight across every
 * registry instance (a Redis lease, renewed while held, freed when done; a crashed instance's
 * expires). A discovery that finds them all held waits, asking again every ~100 ms, for at most
 * `maxWaitMs`; then it is refused with `quota_exceeded` (`discoveries_per_account`). Redis down:
 * the lease quota admits (it protects the service, it must not take it down).
 */
export async function withDiscoveryLease<T>(
  leases: LeaseQuota,
  account: string,
  max: number,
  maxWaitMs: number,
  fn: () => Promise<T>,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const decision = await leases.acquire(KIND, account, max);
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
    // A little jitter: waiting discoveries of one account do not ask in lockstep.
    await new Promise((resolve) => setTimeout(resolve, POLL_MS + Math.floor(Math.random() * POLL_MS)));
  }
}
