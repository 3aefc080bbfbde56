import {
  lambdaToolDocument,
  lambdaToolReplyValue,
  type DeleteLambdaToolRequest,
  type SetLambdaToolRequest,
} from '@mcpx/contracts';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { findAgent } from './agents.actions.js';
import type { AgentsAction } from './agents-deps.js';

/*
 * A lambda lives in the projector, out of reach of the registry's transactions: each action's
 * audit entry is written first, in a transaction that commits only once the projector answers
 * that it holds the change. Postgres lost at the entry changes nothing (the projector is never
 * asked); a refusal rolls the entry back. Lost at the commit itself, the change stands without its
 * entry. So the entry holds only what is known before the projector answers: the document's CID
 * (computed by the rule the projector stores it by, and checked by it), not the agent's set version.
 */

/** SetLambdaTool {agent, name, document}: refused (`conflict`) over an mcp tool's name. */
export const setLambdaTool: AgentsAction<'SetLambdaTool'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  // Refused here as the projector would refuse it; the log names the document by its CID (the
  // document itself goes to the model, not here).
  const { doc, cid } = lambdaToolDocument(action.name, action.document);
  const req: SetLambdaToolRequest = {
    account: caller.account,
    agent: agent.id,
    name: doc.name,
    document: action.document,
    cid,
  };
  return await deps.heldEntries.transaction(deps.db, caller.account, async (trx) => {
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'SetLambdaTool',
      target: { kind: 'tool', name: `${agent.name}/${doc.name}` },
      after: { cid },
    });
    const reply = await deps.bus.request(deps.bus.subjects.projectorLambdaSet, req, lambdaToolReplyValue, 10_000);
    return { ...reply, cid };
  });
};

/** DeleteLambdaTool {agent, name}: refused (`conflict`) for an mcp document. */
export const deleteLambdaTool: AgentsAction<'DeleteLambdaTool'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  const req: DeleteLambdaToolRequest = { account: caller.account, agent: agent.id, name: action.name };
  return await deps.heldEntries.transaction(deps.db, caller.account, async (trx) => {
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'DeleteLambdaTool',
      target: { kind: 'tool', name: `${agent.name}/${action.name}` },
      after: null,
    });
    return await deps.bus.request(deps.bus.subjects.projectorLambdaDelete, req, lambdaToolReplyValue, 10_000);
  });
};
