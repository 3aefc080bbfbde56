import {
  ErrorCodes,
  WireError,
  approvalDecidedEvent,
  type ApprovalDecidedEvent,
  type ApprovalView,
} from '@mcpx/contracts';
import { ARGUMENTS_SHOWN_MAX_BYTES, type ApprovalRecord, type DecideOutcome } from '@mcpx/shared-state';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import type { ReviewAction, ReviewDeps } from './review-deps.js';
import { heldCallView } from './held-call.js';
import type { ActionInput, Caller } from '../shared/action-handler.js';

/** An approval as responses show it (times as ISO-8601, the arguments when they were kept). */
export function approvalView(r: ApprovalRecord): ApprovalView {
  const view: ApprovalView = {
    ...heldCallView(r),
    argsHash: r.argsHash,
    status: r.status,
    createdAt: new Date(r.createdAt).toISOString(),
    expiresAt: new Date(r.expiresAt).toISOString(),
  };
  if (r.argumentsJson !== undefined) view.arguments = JSON.parse(r.argumentsJson) as unknown;
  if (r.decidedAt !== undefined) view.decidedAt = new Date(r.decidedAt).toISOString();
  if (r.decidedBy !== undefined) view.decidedBy = r.decidedBy;
  return view;
}

/** `ListApprovals {}` → `{approvals}`: the account's approvals still waiting for a human, oldest first. */
export const listApprovals: ReviewAction<'ListApprovals'> = async (deps, caller) => {
  const pending = await deps.approvals.listPending(caller.account);
  return { approvals: pending.map(approvalView) };
};

/**
 * Tells the account's subscribers (the console, a waiting runtime) that a call was decided. Core
 * NATS, at most once: `ListApprovals` stays the source of truth. No argument value goes out.
 */
function publishDecided(deps: ReviewDeps, r: ApprovalRecord, decision: 'approved' | 'denied'): void {
  deps.bus.notify<ApprovalDecidedEvent>(
    deps.bus.subjects.approvalDecided(r.account),
    approvalDecidedEvent(r, decision),
  );
}

/** Why a decision was refused, as the signer reads it. */
function refusal(out: Extract<DecideOutcome, { ok: false }>, id: string): WireError {
  switch (out.reason) {
    case 'unknown':
      return new WireError(ErrorCodes.notFound, `approvalId: no approval ${id}`, { field: 'approvalId' });
    case 'expired':
      return new WireError(ErrorCodes.conflict, `approvalId: approval ${id} expired`, {
        field: 'approvalId',
        reason: 'expired',
      });
    case 'decided':
      return new WireError(
        ErrorCodes.conflict,
        `approvalId: approval ${id} was already decided (${out.record?.status ?? 'decided'})`,
        {
          field: 'approvalId',
          reason: 'decided',
          ...(out.record ? { status: out.record.status } : {}),
        },
      );
  }
}

async function decide(
  deps: ReviewDeps,
  caller: Caller,
  action: ActionInput<'ApproveToolCall' | 'DenyToolCall'>,
  decision: 'approved' | 'denied',
): Promise<{ approval: ApprovalView }> {
  const id = action.approvalId;
  const record = await deps.approvals.get(caller.account, id);
  // Nobody approves what they were not shown: a call whose arguments were too large to keep for
  // display can only be denied (the runtime may send it again with smaller arguments).
  if (decision === 'approved' && record !== null && record.status === 'pending' && record.argumentsJson === undefined) {
    throw new WireError(
      ErrorCodes.conflict,
      `approvalId: the arguments of approval ${id} are larger than ${ARGUMENTS_SHOWN_MAX_BYTES / 1024} KiB and cannot be shown, so they cannot be approved; deny it`,
      {
        field: 'approvalId',
        reason: 'arguments_not_shown',
      },
    );
  }
  // The decision lives in Redis, out of reach of Postgres' transactions: its audit entry (never
  // the call's arguments) is written first, in a transaction that commits only once Redis holds
  // the decision. Postgres lost at the entry decides nothing; a refused decision rolls it back.
  // Lost at the commit itself, the decision stands without its entry (see the README).
  const decided = await deps.heldEntries.transaction(deps.db, caller.account, async (trx) => {
    if (record?.status === 'pending')
      await recordAudit(trx, {
        ...auditBy(caller),
        action: decision === 'approved' ? 'ApproveToolCall' : 'DenyToolCall',
        target: { kind: 'approval', name: id },
        after: { decision, tool: record.tool, server: record.server, agent: record.agent, run: record.run },
      });
    const out = await deps.approvals.decide(caller.account, id, decision, caller.signer);
    if (!out.ok) throw refusal(out, id);
    return out.record;
  });
  deps.log.info('tool call approval decided', {
    account: caller.account,
    approval: id,
    decision,
    tool: decided.tool,
    run: decided.run,
  });
  publishDecided(deps, decided, decision);
  return { approval: approvalView(decided) };
}

/** `ApproveToolCall {approvalId}` → `{approval}`: the runtime may now re-send that call, once. OWNER only. */
export const approveToolCall: ReviewAction<'ApproveToolCall'> = (deps, caller, action) =>
  decide(deps, caller, action, 'approved');

/** `DenyToolCall {approvalId}` → `{approval}`: the call it was for is refused. OWNER only. */
export const denyToolCall: ReviewAction<'DenyToolCall'> = (deps, caller, action) =>
  decide(deps, caller, action, 'denied');
