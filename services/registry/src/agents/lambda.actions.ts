import {
  ErrorCodes,
  WireError,
  lambdaToolReplyValue,
  type DeleteLambdaToolRequest,
  type SetLambdaToolRequest,
} from '@mcpx/contracts';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { findAgent } from './agents.actions.js';
import type { AgentsAction } from './agents-deps.js';

/** SetLambdaTool {agent, name, document}: refused (`conflict`) over an mcp tool's name. */
export const setLambdaTool: AgentsAction<'SetLambdaTool'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  const req: SetLambdaToolRequest = {
    account: caller.account,
    agent: agent.id,
    name: action.name,
    document: action.document,
  };
  const reply = await deps.bus.request(deps.bus.subjects.projectorLambdaSet, req, lambdaToolReplyValue, 10_000);
  // The projector holds the document; the log names it by its CID (the document itself goes to the model, not here).
  await recordAudit(deps.db, {
    ...auditBy(caller),
    action: 'SetLambdaTool',
    target: { kind: 'tool', name: `${agent.name}/${reply.name}` },
    after: { cid: reply.cid, version: reply.version },
  });
  // The projector names the CID of every document it saves.
  if (reply.cid === undefined) throw new WireError(ErrorCodes.internal, 'the projector saved the lambda without a CID');
  return { ...reply, cid: reply.cid };
};

/** DeleteLambdaTool {agent, name}: refused (`conflict`) for an mcp document. */
export const deleteLambdaTool: AgentsAction<'DeleteLambdaTool'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  const req: DeleteLambdaToolRequest = { account: caller.account, agent: agent.id, name: action.name };
  const reply = await deps.bus.request(deps.bus.subjects.projectorLambdaDelete, req, lambdaToolReplyValue, 10_000);
  await recordAudit(deps.db, {
    ...auditBy(caller),
    action: 'DeleteLambdaTool',
    target: { kind: 'tool', name: `${agent.name}/${reply.name}` },
    after: { version: reply.version },
  });
  return reply;
};
