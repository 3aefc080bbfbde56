import {
  ACTION_MAP,
  ErrorCodes,
  FieldRules,
  WireError,
  type ActionRequest,
  type ActionResponse,
  type ActionType,
  type Rule,
} from '@mcpx/contracts';
import { listAgentTools, promoteTools } from '../agents/agent-tools.actions.js';
import { createAgent, getAgent, listAgents, updateAgent } from '../agents/agents.actions.js';
import { endRun, invokeTool } from '../agents/runs.actions.js';
import type { Action, ActionDeps, ActionHandler, ActionInput, Caller } from './context.js';
import { deleteMcpServer, listMcpServers, refreshMcpServer, setMcpServer } from '../servers/mcp-servers.actions.js';
import { deleteLambdaTool, setLambdaTool } from '../agents/lambda.actions.js';
import { authorizeMcpServer } from '../servers/oauth.actions.js';
import { searchTools } from '../agents/search.actions.js';
import { authorizeSigner, revokeSigner } from '../signers/signers.actions.js';
import { checkAgentScope, filterAgents } from '../agents/agent-scope.js';
import { approveToolCall, denyToolCall, listApprovals } from '../review/approvals.actions.js';
import { acceptToolChange, listToolChanges, rejectToolChange } from '../review/review.actions.js';
import { listAuditEventsAction } from '../audit/audit.actions.js';
import { answerInputRequest, listInputRequests } from '../review/inputs.actions.js';
import { setToolPermission } from '../servers/permissions.actions.js';
import { deleteVendorConnection, setVendorConnection } from '../servers/builtins.actions.js';
import { createAgentToken, listAgentTokens, revokeAgentToken } from '../agents/agent-tokens.actions.js';
import { decideSignIn, listSignInRequests } from '../sign-ins/sign-in.actions.js';
import { getCallFigures, listCalls } from '../activity/activity.actions.js';
import { cancelTask, getTask, getTaskResult, listTasks } from '../agents/tasks.actions.js';

export type { Action, ActionDeps, ActionHandler, ActionInput, Caller } from './context.js';

/**
 * The handler of each action type: every type of the action map (`ACTION_MAP` of
 * `@mcpx/contracts`, which also holds the roles that may perform it; the account's own key is an
 * OWNER), and no other. Each handler's answer is typed by the map's response of its type, so a
 * missing handler, or one that answers another shape, does not compile.
 */
const HANDLERS: { readonly [T in ActionType]: ActionHandler<T> } = {
  ListMcpServers: listMcpServers,
  SetMcpServer: setMcpServer,
  RefreshMcpServer: refreshMcpServer,
  DeleteMcpServer: deleteMcpServer,
  AuthorizeMcpServer: authorizeMcpServer,
  CreateAgent: createAgent,
  UpdateAgent: updateAgent,
  GetAgent: getAgent,
  ListAgents: listAgents,
  ListAgentTools: listAgentTools,
  InvokeTool: invokeTool,
  EndRun: endRun,
  PromoteTools: promoteTools,
  SearchTools: searchTools,
  SetLambdaTool: setLambdaTool,
  DeleteLambdaTool: deleteLambdaTool,
  AuthorizeSigner: authorizeSigner,
  RevokeSigner: revokeSigner,
  // Permission levels (docs/call.md#permissions): only an OWNER decides whether and when a human stops a call.
  SetToolPermission: setToolPermission,
  ListApprovals: listApprovals,
  ApproveToolCall: approveToolCall,
  DenyToolCall: denyToolCall,
  // Contract pinning: an OWNER reviews held tool changes (a WRITER where PIN_WRITERS_MAY_REVIEW says so, checked in the handler).
  ListToolChanges: listToolChanges,
  AcceptToolChange: acceptToolChange,
  RejectToolChange: rejectToolChange,
  // The audit log: who changed what, when (OWNER only).
  ListAuditEvents: listAuditEventsAction,
  // A server's question mid-call: answered by the account's owner, like an approval is decided.
  ListInputRequests: listInputRequests,
  AnswerInputRequest: answerInputRequest,
  // Built-in servers (docs/servers.md#built-in-servers): a vendor connection lends its token to the vendor's built-ins.
  SetVendorConnection: setVendorConnection,
  DeleteVendorConnection: deleteVendorConnection,
  // The MCP endpoint's bearer tokens: each reaches an agent's tools from outside, so only an OWNER hands one out.
  CreateAgentToken: createAgentToken,
  ListAgentTokens: listAgentTokens,
  RevokeAgentToken: revokeAgentToken,
  // OAuth sign-ins to the endpoint (the registry as authorization server): the owner consents in the console.
  ListSignInRequests: listSignInRequests,
  DecideSignIn: decideSignIn,
  // The call log (docs/activity.md): what agents did, metadata only.
  ListCalls: listCalls,
  GetCallFigures: getCallFigures,
  // Brokered tasks (docs/tasks.md#people), asked of the proxy's task service.
  ListTasks: listTasks,
  GetTask: getTask,
  CancelTask: cancelTask,
  GetTaskResult: getTaskResult,
};

export function isKnownAction(type: string): type is ActionType {
  return Object.hasOwn(HANDLERS, type);
}

/** The action types this registry dispatches (the OpenAPI document must describe each). */
export function dispatchedActionTypes(): ActionType[] {
  return Object.keys(HANDLERS) as ActionType[];
}

/** Each action's request decoder: its table of the action map, closed to other fields (built once). */
const REQUESTS = Object.fromEntries(
  dispatchedActionTypes().map((type) => [type, FieldRules.closed(ACTION_MAP[type].request, ['type'])]),
) as { readonly [T in ActionType]: Rule<ActionRequest<T>> };

/**
 * Decodes an action of a known type by its request table: every field the table names meets its
 * rule and a field it does not name is refused, each error naming the field (`invalid_input`).
 * No handler has run yet, so nothing was written.
 */
export function decodeAction<T extends ActionType>(type: T, action: Action): ActionInput<T> {
  return { ...REQUESTS[type](action, ''), type };
}

/** Runs the handler of `action.type` (the type ties the handler to its input and answer). */
function handle<T extends ActionType>(
  deps: ActionDeps,
  caller: Caller,
  action: ActionInput<T>,
): Promise<ActionResponse<T>> {
  const handler: ActionHandler<T> = HANDLERS[action.type];
  return handler(deps, caller, action);
}

export async function dispatchAction(
  deps: ActionDeps,
  caller: Caller,
  action: Action,
): Promise<ActionResponse<ActionType>> {
  const type = action.type;
  if (!isKnownAction(type))
    throw new WireError(ErrorCodes.invalidInput, `action.type: unknown action ${String(type).slice(0, 64)}`, {
      field: 'action.type',
    });
  const roles = ACTION_MAP[type].roles;
  if (!roles.includes(caller.role))
    throw new WireError(ErrorCodes.forbidden, `signer: a ${caller.role} signer may not ${type}`, {
      field: 'signer',
    });
  const decoded = decodeAction(type, action);
  const bound = await checkAgentScope(deps, caller, decoded);
  if (bound !== undefined && isType(decoded, 'ListAgents'))
    return filterAgents(await handle(deps, caller, decoded), bound);
  return handle(deps, caller, decoded);
}

function isType<T extends ActionType>(action: ActionInput<ActionType>, type: T): action is ActionInput<T> {
  return action.type === type;
}
