import { sql } from 'kysely';
import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import {
  ErrorCodes,
  QueueGroups,
  WireError,
  decodeTokenDecisionAudit,
  isTokenDecider,
  type TokenDecisionAudit,
  type TokenDecisionAuditReply,
} from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { ApprovalStore } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import { recordAudit } from '../audit/audit-log.js';

/** How far the database's clock may lag the clock that stamped an approval's creation. */
const AUDIT_CLOCK_MARGIN_MS = 60 * 60_000;

export interface TokenDecisionAuditDeps {
  bus: Bus;
  db: Db;
  /** The approval store the endpoint decided in (the one `ApproveToolCall` uses). */
  approvals: ApprovalStore;
  log: Logger;
}

/**
 * Answers `registry.approvals.token-decided` (queue group `registry`; only the endpoint's NATS
 * user may publish it): the audit entry of an approval a token holder decided through the
 * endpoint, so the registry stays the only writer of its audit log. The entry is worded from the
 * approval store, not from the request (which names only the account and the approval): the
 * decision, the token as signer (`agent-token:<id>`, role `agent_token`), the tool, server, agent
 * and run. An approval not decided by a token holder (pending, or an owner's decision, audited by
 * its action) is `conflict`; one the store no longer holds is `not_found`; nothing is written
 * for either. Idempotent by the approval: a retry (the endpoint retries a request that got no
 * answer) finds the entry and answers `already`.
 */
export function answerTokenDecisionAudit(deps: TokenDecisionAuditDeps): Subscription {
  const { bus } = deps;
  return bus.serve(bus.subjects.registryTokenDecisionAudit, QueueGroups.registry, decodeTokenDecisionAudit, (req) =>
    audit(deps, req),
  );
}

async function audit(deps: TokenDecisionAuditDeps, req: TokenDecisionAudit): Promise<TokenDecisionAuditReply> {
  const record = await deps.approvals.get(req.account, req.approvalId);
  if (record === null)
    throw new WireError(ErrorCodes.notFound, `approvalId: no approval ${req.approvalId}`, { field: 'approvalId' });
  const decidedBy = record.decidedBy;
  if (record.status === 'pending' || decidedBy === undefined || !isTokenDecider(decidedBy)) {
    throw new WireError(
      ErrorCodes.conflict,
      `approvalId: approval ${req.approvalId} was not decided by a token holder`,
      { field: 'approvalId', reason: 'not_token_decided' },
    );
  }
  // Approved then used is still an approval; a denial is never used.
  const decision = record.status === 'denied' ? 'denied' : 'approved';
  const action = decision === 'approved' ? 'ApproveToolCall' : 'DenyToolCall';
  return deps.db.transaction().execute(async (trx) => {
    // Two requests for one approval (a retry racing its first try on another instance) take turns.
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`token-decision:${req.account}:${req.approvalId}`}, 0))`.execute(
      trx,
    );
    const written = await trx
      .selectFrom('registry.audit_events')
      .select('id')
      .where('account_id', '=', req.account)
      .where('target_kind', '=', 'approval')
      .where('target', '=', req.approvalId)
      .where('action', 'in', ['ApproveToolCall', 'DenyToolCall'])
      // Its entry cannot precede the approval (an hour's margin for the clocks): a short range of the log.
      .where('at', '>=', new Date(record.createdAt - AUDIT_CLOCK_MARGIN_MS))
      .executeTakeFirst();
    if (written !== undefined) return { audit: 'already' } as const;
    await recordAudit(trx, {
      account: req.account,
      signer: decidedBy,
      role: 'agent_token',
      action,
      target: { kind: 'approval', name: req.approvalId },
      after: {
        decision,
        tool: record.tool,
        server: record.server,
        agent: record.agent,
        run: record.run,
        by: 'token_holder',
      },
    });
    deps.log.info('audit entry of a token holder decision written', {
      account: req.account,
      approval: req.approvalId,
      decision,
    });
    return { audit: 'recorded' } as const;
  });
}
