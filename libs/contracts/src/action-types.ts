import type { Permission, ProxyResult } from '@mcpx/domain';
import type { CallOutcomeFilter, CallView, ServerCallFigures } from './activity.js';
import type { AgentTokenView } from './agent-tokens.js';
import type { ActionType, AgentDefinition, AgentView, McpServerConfigInput, RedactedMcpServer } from './api.js';
import type { ErrorCode } from './errors.js';
import type { InputRequestView } from './inputs.js';
import type { AgentToolsReply, ApprovalView, ProviderToolSet } from './payloads.js';
import type { AuditEventView, ToolChangeView } from './reviews.js';
import type { TaskView } from './tasks.js';

/**
 * The action API, typed end to end: per action type its request and response (here), the roles that
 * may perform it and the JSON Schemas the OpenAPI document is generated from (`openApiDocument`):
 * `ACTION_MAP` (action-map.ts), written with the pieces and components of action-schemas.ts.
 * The registry's dispatcher takes its action list and roles from here and types each handler's
 * answer by the response; the CLI and the console take their request and response types.
 */

/** A signer's role in an account (the account's own key is an OWNER). */
export type ActionRole = 'OWNER' | 'WRITER' | 'AGENT';

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1), as plain data. */
export type JsonSchema = { readonly [key: string]: unknown };

/** An agent named by id or by name. */
type AgentRef = string;

/** The request of each action (without `type`). */
export interface ActionRequests {
  ListMcpServers: Record<string, never>;
  SetMcpServer: { name: string; config: McpServerConfigInput & { pin?: 'off' | 'review' | 'strict' } };
  RefreshMcpServer: { name: string };
  DeleteMcpServer: { name: string };
  AuthorizeMcpServer: { name: string };
  CreateAgent: { name: string; definition: AgentDefinition };
  UpdateAgent: { agent: AgentRef; definition: AgentDefinition };
  GetAgent: { agent: AgentRef };
  ListAgents: Record<string, never>;
  /** With `requested`, the answer has the names the promotion rule admits (`promoted`). */
  ListAgentTools: { agent: AgentRef; requested?: string[] };
  InvokeTool: {
    agent: AgentRef;
    tool: string;
    arguments?: Record<string, unknown>;
    run?: string;
    approvalId?: string;
    inputRequestId?: string;
    timeoutMs?: number;
  };
  EndRun: { run: string };
  PromoteTools: { agent: AgentRef; names: string[] };
  SearchTools: { query: string; family?: string; agent?: AgentRef; limit?: number };
  SetLambdaTool: { agent: AgentRef; name: string; document: Record<string, unknown> };
  DeleteLambdaTool: { agent: AgentRef; name: string };
  AuthorizeSigner: { principal: string; role: ActionRole; agents?: string[] };
  RevokeSigner: { principal: string };
  SetToolPermission: { server: string; tool: string; permission: 'act' | 'always_ask' | null };
  ListApprovals: Record<string, never>;
  ApproveToolCall: { approvalId: string };
  DenyToolCall: { approvalId: string };
  ListToolChanges: { server?: string; status?: string };
  AcceptToolChange: { server: string; tool: string; cid: string };
  RejectToolChange: { server: string; tool: string; cid: string };
  ListAuditEvents: {
    limit?: number;
    cursor?: string;
    action?: string;
    targetKind?: string;
    target?: string;
    signer?: string;
    since?: string;
    until?: string;
  };
  ListInputRequests: Record<string, never>;
  /** `inputRequestId` is read as the id when `id` is absent. */
  AnswerInputRequest: {
    id: string;
    action: 'accept' | 'decline' | 'cancel';
    content?: Record<string, unknown>;
    key?: string;
    inputRequestId?: string;
  };
  SetVendorConnection: { vendor: string; accessToken: string; refreshToken?: string; expiresAt?: string };
  DeleteVendorConnection: { vendor: string };
  CreateAgentToken: { agent: AgentRef; name?: string; expiresInDays?: number; userMayApprove?: boolean };
  ListAgentTokens: { agent: AgentRef };
  RevokeAgentToken: { id: string };
  ListSignInRequests: Record<string, never>;
  DecideSignIn: { id: string; decision: 'approve' | 'deny' };
  /** Newest first; `agent` by id or name, `since`/`until` ISO 8601 times, `cursor` from the previous page. */
  ListCalls: {
    agent?: AgentRef;
    server?: string;
    tool?: string;
    outcome?: CallOutcomeFilter;
    since?: string;
    until?: string;
    limit?: number;
    cursor?: string;
  };
  GetCallFigures: { server?: string };
  /** Newest first; `agent` by id or name; at most `TASK_LIST_MAX`. */
  ListTasks: { agent?: AgentRef; limit?: number };
  GetTask: { task: string };
  CancelTask: { task: string };
  GetTaskResult: { task: string };
}

/** What SetMcpServer dropped because the server moved to another origin (names only, never values). */
export interface DroppedSecrets {
  /** Secret headers (a bearer token is `Authorization`) the owner must give again. */
  headers: string[];
  /** The OAuth client and tokens were forgotten: the server authorizes again. */
  oauth: boolean;
}

/** A server just discovered, and what its OAuth needs next. */
export interface DiscoveredServerAnswer {
  server: RedactedMcpServer;
  /** A single-use URL of the registry for the signer to open: the server waits for an OAuth authorization. */
  authorizationUrl?: string;
  /** Why an OAuth authorization could not start. */
  authorizationError?: string;
}

/** An agent's tool set as its owner, the projector, gives it. */
export interface AgentToolsView {
  agent: string;
  version: number;
  tools: AgentToolsReply['documents'];
  conflicts: AgentToolsReply['conflicts'];
  lambdas: NonNullable<AgentToolsReply['lambdas']>;
  index: string;
  listing: string;
  providerTools: ProviderToolSet;
  /** Present when `requested` was: the admitted names, in request order, and their provider formats. */
  promoted?: { names: string[] } & ProviderToolSet;
}

/** A reviewer's decision on a held tool change. */
export interface ToolChangeDecision {
  server: string;
  tool: string;
  cid: string;
  decision: 'accepted' | 'rejected';
  /** Whether agents go without the tool while its change stays held. */
  withheld?: boolean;
}

/** The response of each action. */
export interface ActionResponses {
  ListMcpServers: { servers: RedactedMcpServer[] };
  SetMcpServer: DiscoveredServerAnswer & { droppedSecrets?: DroppedSecrets };
  RefreshMcpServer: DiscoveredServerAnswer;
  DeleteMcpServer: { name: string };
  AuthorizeMcpServer: DiscoveredServerAnswer;
  CreateAgent: { agent: AgentView };
  UpdateAgent: { agent: AgentView };
  GetAgent: { agent: AgentView };
  ListAgents: { agents: AgentView[] };
  ListAgentTools: AgentToolsView;
  InvokeTool: { result: ProxyResult; run: string };
  EndRun: { run: string; ended: true };
  PromoteTools: { agent: string; version: number; names: string[] } & ProviderToolSet;
  SearchTools: {
    families: Array<{
      family: string;
      server: string;
      tools: Array<{ name: string; description?: string; score: number; cid: string }>;
    }>;
  };
  SetLambdaTool: { name: string; cid: string; version: number };
  DeleteLambdaTool: { name: string; version: number };
  AuthorizeSigner: { signer: { principal: string; role: ActionRole; agents?: string[] } };
  RevokeSigner: { revoked: boolean };
  /** The tool's effective level, the level it inherits, and whether the owner overrode it. */
  SetToolPermission: {
    server: string;
    tool: string;
    permission: Permission;
    inherited: Permission;
    overridden: boolean;
  };
  ListApprovals: { approvals: ApprovalView[] };
  ApproveToolCall: { approval: ApprovalView };
  DenyToolCall: { approval: ApprovalView };
  ListToolChanges: { changes: ToolChangeView[] };
  AcceptToolChange: ToolChangeDecision;
  RejectToolChange: ToolChangeDecision;
  ListAuditEvents: { events: AuditEventView[]; nextCursor?: string };
  ListInputRequests: { inputRequests: InputRequestView[] };
  AnswerInputRequest: { inputRequest: InputRequestView };
  SetVendorConnection: { vendor: string; servers: RedactedMcpServer[] };
  DeleteVendorConnection: { vendor: string; servers: string[] };
  /** The token is in this answer and nowhere else. */
  CreateAgentToken: { token: string } & AgentTokenView;
  ListAgentTokens: { agent: string; tokens: AgentTokenView[] };
  RevokeAgentToken: { id: string; revoked: boolean };
  ListSignInRequests: { signIns: SignInRequestView[] };
  DecideSignIn: { id: string; decision: 'approve' | 'deny'; continueUrl: string };
  ListCalls: { calls: CallView[]; nextCursor?: string };
  GetCallFigures: { at: string; servers: ServerCallFigures[] };
  ListTasks: { tasks: TaskView[] };
  GetTask: { task: TaskView };
  CancelTask: { task: TaskView };
  GetTaskResult: { result: ProxyResult; taskId: string };
}

/** An OAuth sign-in to an agent endpoint waiting for the owner's decision (never a code, cookie or nonce). */
export interface SignInRequestView {
  id: string;
  agent: { id: string; name: string };
  /** The client: its metadata document URL (its id), the name that document gives (nobody verified it) and its host. */
  client: { id: string; name: string; nameVerified: false; host: string };
  redirectUri: string;
  redirectHost: string;
  resource: string;
  createdAt: string;
  expiresAt: string;
}

export type ActionRequest<T extends ActionType> = ActionRequests[T];
export type ActionResponse<T extends ActionType> = ActionResponses[T];
/** An action as sent in the envelope: its type and its request. */
export type ActionOf<T extends ActionType> = { type: T } & ActionRequests[T];

export interface ActionSpec {
  /** One line on what the action does. */
  summary: string;
  roles: readonly ActionRole[];
  request: JsonSchema;
  response: JsonSchema;
  /** Codes the action answers besides the envelope's (`invalid_input`, `unauthenticated`, `forbidden`, `rate_limited`, `internal`). */
  errors?: readonly ErrorCode[];
}
