import { ErrorCodes, WireError } from '@mcpx/contracts';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS, type PendingScope, type PendingUnit } from '@mcpx/shared-state';

/** What waits for a person: an approval of an `always_ask` call, or a server's question. */
export type PendingKind = 'approval' | 'input';

const NOUN: Record<PendingKind, { one: string; many: string; ask: string; who: string }> = {
  approval: { one: 'approval', many: 'approvals', ask: 'ask for another', who: 'a human' },
  input: { one: 'input request', many: 'input requests', ask: 'ask another', who: 'a person' },
};

/**
 * When a deployment-wide cap is full, others' records free places as they are decided or expire:
 * the caller may try again after this long (an account's own caps free only when its owner acts).
 */
export const GLOBAL_PENDING_RETRY_MS = 60_000;

/**
 * The limit a full cap is known by (`details.limit`): `pending_<kind>s_per_agent|per_account|total`
 * for a count, `pending_<kind>_bytes_per_account|total` for bytes.
 */
export function pendingLimitName(kind: PendingKind, scope: PendingScope, unit: PendingUnit): string {
  const where = scope === 'global' ? 'total' : `per_${scope}`;
  return unit === 'bytes' ? `pending_${kind}_bytes_${where}` : `pending_${kind}s_${where}`;
}

/**
 * The typed refusal of a call whose approval or input request a full cap did not let be recorded
 * (nothing was): `quota_exceeded` naming the scope (`field`), the limit and its value; a global
 * cap says when to retry.
 */
export function pendingFullError(
  kind: PendingKind,
  full: { scope: PendingScope; unit: PendingUnit; max: number },
  tool: string,
): WireError {
  const n = NOUN[kind];
  const { scope, unit, max } = full;
  const held = unit === 'bytes' ? `${max} bytes of ${n.many}` : `${max} ${n.many}`;
  const whose = scope === 'global' ? 'this deployment (every account together)' : `this ${scope}`;
  const then =
    scope === 'global'
      ? 'try again later'
      : `${kind === 'approval' ? 'decide' : 'answer'} some before ${tool} can ${n.ask}`;
  return new WireError(ErrorCodes.quotaExceeded, `${scope}: ${held} of ${whose} are waiting for ${n.who}; ${then}`, {
    field: scope,
    limit: pendingLimitName(kind, scope, unit),
    max,
    tool,
    ...(scope === 'global' ? { retryAfterMs: GLOBAL_PENDING_RETRY_MS } : {}),
  });
}

/**
 * A Redis that cannot take the record (out of reach, or full: `OOM command not allowed`) is the
 * typed `unavailable` (dependency redis, retry after a moment; nothing was recorded), never
 * `internal`. Anything else is returned as it is.
 */
export function pendingStoreDown(err: unknown, kind: PendingKind): unknown {
  if (err instanceof WireError || !isRedisUnavailable(err)) return err;
  return new WireError(ErrorCodes.unavailable, `redis is unavailable: the ${NOUN[kind].one} was not recorded`, {
    dependency: 'redis',
    retryAfterMs: REDIS_RETRY_AFTER_MS,
  });
}
