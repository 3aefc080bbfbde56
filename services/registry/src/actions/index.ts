import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { SignerRole } from '../repositories/accounts.repository.js';
import { listAgentTools, promoteTools } from './agent-tools.actions.js';
import { createAgent, getAgent, listAgents, updateAgent } from './agents.actions.js';
import { endRun, invokeTool } from './runs.actions.js';
import type { Action, ActionDeps, ActionHandler, Caller } from './context.js';
import { deleteMcpServer, listMcpServers, refreshMcpServer, setMcpServer } from './mcp-servers.actions.js';
import { deleteLambdaTool, setLambdaTool } from './lambda.actions.js';
import { authorizeMcpServer } from './oauth.actions.js';
import { searchTools } from './search.actions.js';
import { authorizeSigner, revokeSigner } from './signers.actions.js';
import { checkAgentScope, filterAgents } from './agent-scope.js';
import { approveToolCall, denyToolCall, listApprovals } from './approvals.actions.js';
import { acceptToolChange, listToolChanges, rejectToolChange } from '../pins/review.actions.js';
import { listAuditEventsAction } from '../audit/audit.actions.js';
import { answerInputRequest, listInputRequests } from './inputs.actions.js';
import { setToolPermission } from './permissions.actions.js';
import { deleteVendorConnection, setVendorConnection } from './builtins.actions.js';
import { createAgentToken, listAgentTokens, revokeAgentToken } from './agent-tokens.actions.js';

export type { Action, ActionDeps, Caller } from './context.js';

/** Each action and the roles that may perform it (the account's own key is an OWNER). */
const ACTIONS: Record<string, { handler: ActionHandler; roles: SignerRole[] }> = {
  ListMcpServers: { handler: listMcpServers, roles: ['OWNER', 'WRITER', 'AGENT'] },
  SetMcpServer: { handler: setMcpServer, roles: ['OWNER', 'WRITER'] },
  RefreshMcpServer: { handler: refreshMcpServer, roles: ['OWNER', 'WRITER'] },
  DeleteMcpServer: { handler: deleteMcpServer, roles: ['OWNER', 'WRITER'] },
  AuthorizeMcpServer: { handler: authorizeMcpServer, roles: ['OWNER', 'WRITER'] },
  CreateAgent: { handler: createAgent, roles: ['OWNER', 'WRITER'] },
  UpdateAgent: { handler: updateAgent, roles: ['OWNER', 'WRITER'] },
  GetAgent: { handler: getAgent, roles: ['OWNER', 'WRITER', 'AGENT'] },
  ListAgents: { handler: listAgents, roles: ['OWNER', 'WRITER', 'AGENT'] },
  ListAgentTools: { handler: listAgentTools, roles: ['OWNER', 'WRITER', 'AGENT'] },
  InvokeTool: { handler: invokeTool, roles: ['OWNER', 'WRITER', 'AGENT'] },
  EndRun: { handler: endRun, roles: ['OWNER', 'WRITER', 'AGENT'] },
  PromoteTools: { handler: promoteTools, roles: ['OWNER', 'WRITER', 'AGENT'] },
  SearchTools: { handler: searchTools, roles: ['OWNER', 'WRITER', 'AGENT'] },
  SetLambdaTool: { handler: setLambdaTool, roles: ['OWNER', 'WRITER', 'AGENT'] },
  DeleteLambdaTool: { handler: deleteLambdaTool, roles: ['OWNER', 'WRITER', 'AGENT'] },
  AuthorizeSigner: { handler: authorizeSigner, roles: ['OWNER'] },
  RevokeSigner: { handler: revokeSigner, roles: ['OWNER'] },
  // Permission levels (seed 001): only an OWNER decides whether and when a human stops a call.
  SetToolPermission: { handler: setToolPermission, roles: ['OWNER'] },
  ListApprovals: { handler: listApprovals, roles: ['OWNER', 'WRITER'] },
  ApproveToolCall: { handler: approveToolCall, roles: ['OWNER'] },
  DenyToolCall: { handler: denyToolCall, roles: ['OWNER'] },
  // Contract pinning: an OWNER reviews held tool changes (a WRITER where PIN_WRITERS_MAY_REVIEW says so, checked in the handler).
  ListToolChanges: { handler: listToolChanges, roles: ['OWNER', 'WRITER'] },
  AcceptToolChange: { handler: acceptToolChange, roles: ['OWNER', 'WRITER'] },
  RejectToolChange: { handler: rejectToolChange, roles: ['OWNER', 'WRITER'] },
  // The audit log: who changed what, when (OWNER only).
  ListAuditEvents: { handler: listAuditEventsAction, roles: ['OWNER'] },
  // A server's question mid-call: answered by the account's owner, like an approval is decided.
  ListInputRequests: { handler: listInputRequests, roles: ['OWNER', 'WRITER'] },
  AnswerInputRequest: { handler: answerInputRequest, roles: ['OWNER'] },
  // Built-in servers (seed 001): a vendor connection lends its token to the vendor's built-ins.
  SetVendorConnection: { handler: setVendorConnection, roles: ['OWNER', 'WRITER'] },
  DeleteVendorConnection: { handler: deleteVendorConnection, roles: ['OWNER', 'WRITER'] },
  // The MCP endpoint's bearer tokens (issue 14): each reaches an agent's tools from outside, so only an OWNER hands one out.
  CreateAgentToken: { handler: createAgentToken, roles: ['OWNER'] },
  ListAgentTokens: { handler: listAgentTokens, roles: ['OWNER'] },
  RevokeAgentToken: { handler: revokeAgentToken, roles: ['OWNER'] },
};

export function isKnownAction(type: string): boolean {
  return Object.hasOwn(ACTIONS, type);
}

export async function dispatchAction(deps: ActionDeps, caller: Caller, action: Action): Promise<unknown> {
  const entry = Object.hasOwn(ACTIONS, action.type) ? ACTIONS[action.type] : undefined;
  if (entry === undefined) throw new WireError(ErrorCodes.invalidInput, `action.type: unknown action ${String(action.type).slice(0, 64)}`, { field: 'action.type' });
  if (!entry.roles.includes(caller.role)) throw new WireError(ErrorCodes.forbidden, `signer: a ${caller.role} signer may not ${action.type}`, { field: 'signer' });
  const bound = await checkAgentScope(deps, caller, action);
  const result = await entry.handler(deps, caller, action);
  return bound !== undefined && action.type === 'ListAgents' ? filterAgents(result, bound) : result;
}
