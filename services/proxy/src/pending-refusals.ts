import { ErrorCodes, WireError } from '@mcpx/contracts';
import { DEFAULT_QUOTAS } from '@mcpx/config';
import {
  isRedisUnavailable,
  REDIS_RETRY_AFTER_MS,
  type PendingCaps,
  type PendingScope,
  type PendingUnit,
} from '@mcpx/shared-state';

/** What waits for a person: an approval of an `always_ask` call, or a server's question. */
export type PendingKind = 'approval' | 'input';

const NOUN: Record<PendingKind, { one: string; many: string; ask: string; who: string }> = {
  approval: { one: 'approval', many: 'approvals', ask: 'ask for another', who: 'a human' },
  input: { one: 'input request', many: 'input requests', ask: 'ask another', who: 'a person' },
};

/** The caps on what waits for a person, as a gate's deps give them (each absent: the kind's default of `config.quotas`; 0 = no cap). */
export interface PendingCapsDeps {
  /** Records one agent may have waiting at once. */
  maxPendingPerAgent?: number;
  /** Records one account, all its agents together, may have waiting at once. */
  maxPendingPerAccount?: number;
  /** Bytes of waiting records one account may hold. */
  maxPendingBytesPerAccount?: number;
  /** Records, and their bytes, waiting across every account. */
  maxPendingGlobal?: number;
  maxPendingBytesGlobal?: number;
}

/**
 * A gate's caps, each the deps' or the default of its kind: approvals (`pendingApprovals*`) or
 * input requests (`pendingInputs*`; an agent's input requests share the pending-approvals cap).
 */
export function pendingCaps(deps: PendingCapsDeps, kind: PendingKind): Required<PendingCaps> {
  const d = DEFAULT_QUOTAS;
  const approval = kind === 'approval';
  return {
    maxPendingPerAgent: deps.maxPendingPerAgent ?? d.pendingApprovalsPerAgent,
    maxPendingPerAccount:
      deps.maxPendingPerAccount ?? (approval ? d.pendingApprovalsPerAccount : d.pendingInputsPerAccount),
    maxPendingBytesPerAccount:
      deps.maxPendingBytesPerAccount ?? (approval ? d.pendingApprovalBytesPerAccount : d.pendingInputBytesPerAccount),
    maxPendingGlobal: deps.maxPendingGlobal ?? (approval ? d.pendingApprovalsTotal : d.pendingInputsTotal),
    maxPendingBytesGlobal:
      deps.maxPendingBytesGlobal ?? (approval ? d.pendingApprovalBytesTotal : d.pendingInputBytesTotal),
  };
}

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
