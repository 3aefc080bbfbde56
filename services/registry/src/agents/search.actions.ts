import { checkSearchInput, familyOf, toolSearchReplyValue, type ToolSearchRequest } from '@mcpx/contracts';
import { findAgent } from './agents.actions.js';
import type { AgentsAction } from './agents-deps.js';

/**
 * SearchTools {query, family?, agent?, limit?}: the account's remote tools ranked by name and
 * description, grouped by family (`mcp:<server>`), best family first. With `agent`, only tools in
 * that agent's effective set. The projector, which owns the documents, answers the search.
 */
export const searchTools: AgentsAction<'SearchTools'> = async (deps, caller, action) => {
  const input = checkSearchInput({ query: action.query, family: action.family, limit: action.limit });
  const agent =
    action.agent === undefined || action.agent === null
      ? undefined
      : (await findAgent(deps, caller.account, action.agent)).id;
  const req: ToolSearchRequest = {
    account: caller.account,
    query: input.query,
    limit: input.limit,
    ...(input.server !== undefined ? { family: familyOf(input.server) } : {}),
    ...(agent !== undefined ? { agent } : {}),
  };
  const reply = await deps.bus.request(deps.bus.subjects.projectorToolsSearch, req, toolSearchReplyValue, 10_000);
  return { families: reply.families };
};
