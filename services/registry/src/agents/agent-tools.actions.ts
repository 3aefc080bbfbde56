import { agentToolsReplyValue, type AgentToolsReply, type AgentToolsRequest } from '@mcpx/contracts';
import { findAgent } from './agents.actions.js';
import type { AgentsAction, AgentsDeps } from './agents-deps.js';

/** Reads an agent's tool set from its owner, the projector. */
async function agentTools(
  deps: AgentsDeps,
  account: string,
  agent: string,
  requested?: string[],
): Promise<AgentToolsReply> {
  const req: AgentToolsRequest = requested === undefined ? { account, agent } : { account, agent, requested };
  return deps.bus.request(deps.bus.subjects.projectorAgentTools, req, agentToolsReplyValue, 10_000);
}

/**
 * ListAgentTools: the agent's enabled documents with their contracts, its index and listing, its
 * lambdas, the provider formats of its enabled documents and, with `requested`, the promotion rule.
 */
export const listAgentTools: AgentsAction<'ListAgentTools'> = async (deps, caller, action) => {
  const agent = (await findAgent(deps, caller.account, action.agent)).id;
  const reply = await agentTools(deps, caller.account, agent, action.requested);
  return {
    agent,
    version: reply.version,
    tools: reply.documents,
    conflicts: reply.conflicts,
    lambdas: reply.lambdas ?? [],
    index: reply.index ?? '',
    listing: reply.listing ?? '',
    providerTools: reply.providerTools ?? { openai: [], anthropic: [] },
    ...(reply.promoted ? { promoted: reply.promoted } : {}),
  };
};

/** PromoteTools {agent, names}: the names the promotion rule admits and their provider formats. */
export const promoteTools: AgentsAction<'PromoteTools'> = async (deps, caller, action) => {
  const agent = (await findAgent(deps, caller.account, action.agent)).id;
  const reply = await agentTools(deps, caller.account, agent, action.names);
  return { agent, version: reply.version, ...(reply.promoted ?? { names: [], openai: [], anthropic: [] }) };
};
