import { invalidInput, type DeleteLambdaToolRequest, type LambdaToolReply, type SetLambdaToolRequest } from '@mcpx/contracts';
import { findAgent } from './agents.actions.js';
import type { ActionHandler } from './context.js';

/** SetLambdaTool {agent, name, document}: refused (`conflict`) over an mcp tool's name. */
export const setLambdaTool: ActionHandler = async (deps, caller, action) => {
  const agent = (await findAgent(deps, caller.account, action.agent)).id;
  if (typeof action.name !== 'string') throw invalidInput('name', 'must be a string');
  const req: SetLambdaToolRequest = { account: caller.account, agent, name: action.name, document: action.document };
  return deps.bus.request<LambdaToolReply>(deps.bus.subjects.projectorLambdaSet, req, 10_000);
};

/** DeleteLambdaTool {agent, name}: refused (`conflict`) for an mcp document. */
export const deleteLambdaTool: ActionHandler = async (deps, caller, action) => {
  const agent = (await findAgent(deps, caller.account, action.agent)).id;
  if (typeof action.name !== 'string' || action.name === '') throw invalidInput('name', 'must name a lambda');
  const req: DeleteLambdaToolRequest = { account: caller.account, agent, name: action.name };
  return deps.bus.request<LambdaToolReply>(deps.bus.subjects.projectorLambdaDelete, req, 10_000);
};
