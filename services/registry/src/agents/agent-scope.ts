import { ErrorCodes, WireError, type ActionResponse } from '@mcpx/contracts';
import { findAgent } from './agents.actions.js';
import type { AgentsDeps } from './agents-deps.js';
import type { Action, Caller } from '../shared/action-handler.js';

/**
 * Keeps an AGENT signer to the agents it is bound to (`AuthorizeSigner {role: 'AGENT', agents}`):
 * an action naming another agent of the account is `forbidden` (field `agent`), an action that
 * would range over every agent (SearchTools without `agent`) must name one, and ListAgents lists
 * only the bound ones (`filterAgents`), ListMcpServers only their servers (`grantedServers`).
 * Other roles pass unchanged.
 */
export async function checkAgentScope(
  deps: AgentsDeps,
  caller: Caller,
  action: Action,
): Promise<readonly string[] | undefined> {
  if (caller.role !== 'AGENT') return undefined;
  const bound = await deps.accounts.boundAgents(caller.account, caller.signer);
  const named = action.agent;
  if (named === undefined || named === null) {
    if (action.type === 'SearchTools')
      throw new WireError(
        ErrorCodes.forbidden,
        'agent: an AGENT signer searches the tools of an agent it is bound to; name it',
        { field: 'agent' },
      );
    return bound;
  }
  // An agent that does not exist and one the signer is not bound to answer alike: an AGENT signer
  // learns nothing of the account's other agents.
  const agent = await findAgent(deps, caller.account, named).catch((error: unknown) => {
    if (error instanceof WireError && error.code === ErrorCodes.notFound) return null;
    throw error;
  });
  if (agent === null || !bound.includes(agent.id))
    throw new WireError(ErrorCodes.forbidden, 'agent: this AGENT signer is not bound to that agent', {
      field: 'agent',
    });
  return bound;
}

/** ListAgents for an AGENT signer: only the agents it is bound to. */
export function filterAgents(
  result: ActionResponse<'ListAgents'>,
  bound: readonly string[],
): ActionResponse<'ListAgents'> {
  return { ...result, agents: result.agents.filter((a) => bound.includes(a.id)) };
}

/**
 * The names of the servers an AGENT signer's bound agents are granted (ListMcpServers shows it
 * only those); undefined for the other roles, who see every server of the account.
 */
export async function grantedServers(deps: AgentsDeps, caller: Caller): Promise<ReadonlySet<string> | undefined> {
  if (caller.role !== 'AGENT') return undefined;
  const [bound, agents] = await Promise.all([
    deps.accounts.boundAgents(caller.account, caller.signer),
    deps.agents.list(caller.account),
  ]);
  return new Set(agents.filter((a) => bound.includes(a.id)).flatMap((a) => a.definition.mcpServers));
}
