import {
  ErrorCodes,
  WireError,
  invalidInput,
  type AgentToolsReply,
  type AgentToolsRequest,
  type DeleteLambdaToolRequest,
  type LambdaToolReply,
  type SetLambdaToolRequest,
} from '@mcpx/contracts';
import type { SignerRole } from '../repositories/accounts.repository.js';
import type { ActionDeps, ActionHandler } from './context.js';

/** The agent's id, from its id or name in the account. */
async function agentId(deps: ActionDeps, account: string, ref: unknown): Promise<string> {
  if (typeof ref !== 'string' || ref === '' || ref.length > 128) throw invalidInput('agent', 'must name an agent (id or name)');
  const agent = await deps.agents.find(account, ref);
  if (agent === null) throw new WireError(ErrorCodes.notFound, `no agent ${ref}`, { field: 'agent' });
  return agent.id;
}

async function agentTools(deps: ActionDeps, account: string, agent: string, requested?: string[]): Promise<AgentToolsReply> {
  const req: AgentToolsRequest = requested === undefined ? { account, agent } : { account, agent, requested };
  return deps.bus.request<AgentToolsReply>(deps.bus.subjects.projectorAgentTools, req, 10_000);
}

/**
 * ListAgentTools: the agent's enabled documents with their contracts, its index and listing, its
 * lambdas, the provider formats of its enabled documents and, with `requested`, the promotion rule.
 */
export const listAgentToolsWithProviders: ActionHandler = async (deps, caller, action) => {
  const agent = await agentId(deps, caller.account, action.agent);
  const requested = action.requested === undefined ? undefined : requestedNames(action.requested, 'requested');
  const reply = await agentTools(deps, caller.account, agent, requested);
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
export const promoteTools: ActionHandler = async (deps, caller, action) => {
  const agent = await agentId(deps, caller.account, action.agent);
  const reply = await agentTools(deps, caller.account, agent, requestedNames(action.names, 'names'));
  return { agent, version: reply.version, ...(reply.promoted ?? { names: [], openai: [], anthropic: [] }) };
};

/** SetLambdaTool {agent, name, document}: refused (`conflict`) over an mcp tool's name. */
export const setLambdaTool: ActionHandler = async (deps, caller, action) => {
  const agent = await agentId(deps, caller.account, action.agent);
  if (typeof action.name !== 'string') throw invalidInput('name', 'must be a string');
  const req: SetLambdaToolRequest = { account: caller.account, agent, name: action.name, document: action.document };
  return deps.bus.request<LambdaToolReply>(deps.bus.subjects.projectorLambdaSet, req, 10_000);
};

/** DeleteLambdaTool {agent, name}: refused (`conflict`) for an mcp document. */
export const deleteLambdaTool: ActionHandler = async (deps, caller, action) => {
  const agent = await agentId(deps, caller.account, action.agent);
  if (typeof action.name !== 'string' || action.name === '') throw invalidInput('name', 'must name a lambda');
  const req: DeleteLambdaToolRequest = { account: caller.account, agent, name: action.name };
  return deps.bus.request<LambdaToolReply>(deps.bus.subjects.projectorLambdaDelete, req, 10_000);
};

function requestedNames(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length > 256 || value.some((n) => typeof n !== 'string')) throw invalidInput(field, 'must be a list of at most 256 tool names');
  return value as string[];
}

/**
 * The actions the projector serves, forwarded. ListAgentTools here supersedes the one in
 * agents.actions.ts: the same fields plus lambdas, provider formats and promotion.
 */
export const LAMBDA_ACTIONS: Record<string, { handler: ActionHandler; roles: SignerRole[] }> = {
  ListAgentTools: { handler: listAgentToolsWithProviders, roles: ['OWNER', 'WRITER', 'AGENT'] },
  PromoteTools: { handler: promoteTools, roles: ['OWNER', 'WRITER', 'AGENT'] },
  SetLambdaTool: { handler: setLambdaTool, roles: ['OWNER', 'WRITER', 'AGENT'] },
  DeleteLambdaTool: { handler: deleteLambdaTool, roles: ['OWNER', 'WRITER', 'AGENT'] },
};
