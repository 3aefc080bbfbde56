/** Whose waiting queue a pending-approvals or pending-inputs cap counts. */
export type PendingScope = 'agent' | 'account';

/**
 * The caps of one creation of something that waits for a person (an approval, an input request):
 * how many one agent, and one account across all its agents, may have waiting at once. 0,
 * negative or absent is no cap. The stores count and record in one Lua step, so racing calls —
 * of one agent, or of the account's many agents, over any number of proxies — never pass a cap.
 */
export interface PendingCaps {
  maxPendingPerAgent?: number;
  maxPendingPerAccount?: number;
}

/** A cap as the stores' scripts take it: a whole number, 0 for none. */
export function capArg(max: number | undefined): number {
  return max !== undefined && Number.isFinite(max) && max > 0 ? Math.floor(max) : 0;
}
