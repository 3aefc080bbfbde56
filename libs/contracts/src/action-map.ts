import type { Permission, ProxyResult } from '@mcpx/domain';
import type { CallOutcomeFilter, CallView, ServerCallFigures } from './activity.js';
import type { AgentTokenView } from './agent-tokens.js';
import type { AgentDefinition, AgentView, McpServerConfigInput, RedactedMcpServer } from './api.js';
import { ActionTypes, type ActionType } from './api.js';
import type { ErrorCode } from './errors.js';
import type { InputRequestView } from './inputs.js';
import type { AgentToolsReply, ApprovalView, ProviderToolSet } from './payloads.js';
import type { AuditEventView, ToolChangeView } from './reviews.js';
import type { TaskView } from './tasks.js';

/**
 * The action API, typed end to end: per action type its request and response, the roles that may
 * perform it, and the JSON Schemas the OpenAPI document is generated from (`openApiDocument`).
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
  InvokeTool: { agent: AgentRef; tool: string; arguments?: Record<string, unknown>; run?: string; approvalId?: string; inputRequestId?: string; timeoutMs?: number };
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
  ListAuditEvents: { limit?: number; cursor?: string; action?: string; targetKind?: string; target?: string; signer?: string; since?: string; until?: string };
  ListInputRequests: Record<string, never>;
  /** `inputRequestId` is read as the id when `id` is absent. */
  AnswerInputRequest: { id: string; action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown>; key?: string; inputRequestId?: string };
  SetVendorConnection: { vendor: string; accessToken: string; refreshToken?: string; expiresAt?: string };
  DeleteVendorConnection: { vendor: string };
  CreateAgentToken: { agent: AgentRef; name?: string; expiresInDays?: number; userMayApprove?: boolean };
  ListAgentTokens: { agent: AgentRef };
  RevokeAgentToken: { id: string };
  ListSignInRequests: Record<string, never>;
  DecideSignIn: { id: string; decision: 'approve' | 'deny' };
  /** Newest first; `agent` by id or name, `since`/`until` ISO 8601 times, `cursor` from the previous page. */
  ListCalls: { agent?: AgentRef; server?: string; tool?: string; outcome?: CallOutcomeFilter; since?: string; until?: string; limit?: number; cursor?: string };
  GetCallFigures: { server?: string };
  /** Newest first; `agent` by id or name; at most `TASK_LIST_MAX`. */
  ListTasks: { agent?: AgentRef; limit?: number };
  GetTask: { task: string };
  CancelTask: { task: string };
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
  SearchTools: { families: Array<{ family: string; server: string; tools: Array<{ name: string; description?: string; score: number; cid: string }> }> };
  SetLambdaTool: { name: string; cid: string; version: number };
  DeleteLambdaTool: { name: string; version: number };
  AuthorizeSigner: { signer: { principal: string; role: ActionRole; agents?: string[] } };
  RevokeSigner: { revoked: boolean };
  /** The tool's effective level, the level it inherits, and whether the owner overrode it. */
  SetToolPermission: { server: string; tool: string; permission: Permission; inherited: Permission; overridden: boolean };
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

const str: JsonSchema = { type: 'string' };
const int: JsonSchema = { type: 'integer' };
const bool: JsonSchema = { type: 'boolean' };
const anyObject: JsonSchema = { type: 'object' };
const arr = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const obj = (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema => (required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties });
const agent: JsonSchema = { type: 'string', description: 'An agent id or name' };
const ALL: readonly ActionRole[] = ['OWNER', 'WRITER', 'AGENT'];
const WRITERS: readonly ActionRole[] = ['OWNER', 'WRITER'];
const OWNER: readonly ActionRole[] = ['OWNER'];
const nothing = obj({});
/** A brokered task as the task actions show it (`TaskView`): never its arguments, result or credentials. */
const taskView = obj(
  {
    id: str,
    agent: str,
    run: str,
    server: str,
    tool: str,
    state: { enum: ['working', 'input_required', 'completed', 'failed', 'cancelled', 'expired'] },
    statusMessage: str,
    dialect: str,
    inputRequestId: str,
    error: obj({ code: str, message: str }, ['code', 'message']),
    resultReady: bool,
    createdAt: str,
    updatedAt: str,
    expiresAt: str,
    finishedAt: str,
  },
  ['id', 'agent', 'run', 'server', 'tool', 'state', 'dialect', 'resultReady', 'createdAt', 'updatedAt', 'expiresAt'],
);
const review = obj({ server: str, tool: str, cid: str }, ['server', 'tool', 'cid']);
const reviewed = obj({ server: str, tool: str, cid: str, decision: { enum: ['accepted', 'rejected'] }, withheld: bool }, ['server', 'tool', 'cid', 'decision']);
const discovered = { server: ref('RedactedMcpServer'), authorizationUrl: str, authorizationError: str };
const level: JsonSchema = { enum: ['act', 'always_ask'] };
const providerTools = { openai: arr(anyObject), anthropic: arr(anyObject) };

/** Every action: the one list the registry dispatches and the OpenAPI document describes. */
export const ACTION_MAP: { readonly [T in ActionType]: ActionSpec } = {
  ListMcpServers: {
    summary: "The account's remote MCP servers, redacted (an AGENT signer: its agents' servers)",
    roles: ALL,
    request: nothing,
    response: obj({ servers: arr(ref('RedactedMcpServer')) }, ['servers']),
  },
  SetMcpServer: {
    summary: 'Creates or replaces a remote MCP server and discovers its tools',
    roles: WRITERS,
    request: obj({ name: str, config: ref('McpServerConfigInput') }, ['name', 'config']),
    response: obj({ ...discovered, droppedSecrets: obj({ headers: arr(str), oauth: bool }, ['headers', 'oauth']) }, ['server']),
    errors: ['quota_exceeded', 'conflict'],
  },
  RefreshMcpServer: {
    summary: "Discovers a server's tools again",
    roles: WRITERS,
    request: obj({ name: str }, ['name']),
    response: obj(discovered, ['server']),
    errors: ['not_found', 'quota_exceeded'],
  },
  DeleteMcpServer: { summary: 'Deletes a server; it leaves every grant', roles: WRITERS, request: obj({ name: str }, ['name']), response: obj({ name: str }, ['name']), errors: ['not_found'] },
  AuthorizeMcpServer: {
    summary: 'A fresh OAuth authorization URL for a server with config.auth oauth',
    roles: WRITERS,
    request: obj({ name: str }, ['name']),
    response: obj(discovered, ['server']),
    errors: ['not_found', 'conflict'],
  },
  CreateAgent: {
    summary: 'Creates an agent granted servers',
    roles: WRITERS,
    request: obj({ name: str, definition: ref('AgentDefinition') }, ['name', 'definition']),
    response: obj({ agent: ref('AgentView') }, ['agent']),
    errors: ['conflict', 'quota_exceeded'],
  },
  UpdateAgent: {
    summary: "Replaces an agent's definition",
    roles: WRITERS,
    request: obj({ agent, definition: ref('AgentDefinition') }, ['agent', 'definition']),
    response: obj({ agent: ref('AgentView') }, ['agent']),
    errors: ['not_found'],
  },
  GetAgent: { summary: 'One agent', roles: ALL, request: obj({ agent }, ['agent']), response: obj({ agent: ref('AgentView') }, ['agent']), errors: ['not_found'] },
  ListAgents: { summary: "The account's agents (an AGENT signer: its own)", roles: ALL, request: nothing, response: obj({ agents: arr(ref('AgentView')) }, ['agents']) },
  ListAgentTools: {
    summary: "An agent's projected tools",
    roles: ALL,
    request: obj({ agent, requested: arr(str) }, ['agent']),
    response: obj(
      {
        agent: str,
        version: int,
        tools: arr(anyObject),
        conflicts: arr(obj({ name: str, server: str, heldBy: str }, ['name', 'server', 'heldBy'])),
        lambdas: arr(anyObject),
        index: str,
        listing: str,
        providerTools: obj(providerTools, ['openai', 'anthropic']),
        promoted: obj({ names: arr(str), ...providerTools }, ['names', 'openai', 'anthropic']),
      },
      ['agent', 'version', 'tools', 'conflicts', 'lambdas', 'index', 'listing', 'providerTools'],
    ),
    errors: ['not_found'],
  },
  InvokeTool: {
    summary: 'One call through the proxy; without run the run ends at once',
    roles: ALL,
    request: obj({ agent, tool: str, arguments: anyObject, run: str, approvalId: str, inputRequestId: str, timeoutMs: int }, ['agent', 'tool']),
    response: obj({ result: anyObject, run: str }, ['result', 'run']),
    errors: [
      'not_found',
      'not_granted',
      'invalid_arguments',
      'server_error',
      'transport_error',
      'auth_required',
      'timeout',
      'call_lost',
      'maybe_executed',
      'cancelled',
      'approval_required',
      'approval_refused',
      'input_required',
      'input_refused',
      'outbound_refused',
      'held_for_review',
    ],
  },
  EndRun: {
    summary: "Ends one of the account's runs; every proxy closes its connections",
    roles: ALL,
    request: obj({ run: str }, ['run']),
    response: obj({ run: str, ended: { const: true } }, ['run', 'ended']),
  },
  PromoteTools: {
    summary: 'The admitted names and their provider tool formats',
    roles: ALL,
    request: obj({ agent, names: arr(str) }, ['agent', 'names']),
    response: obj({ agent: str, version: int, names: arr(str), ...providerTools }, ['agent', 'version', 'names', 'openai', 'anthropic']),
    errors: ['not_found'],
  },
  SearchTools: {
    summary: 'Tools found by meaning, grouped by family',
    roles: ALL,
    request: obj({ query: str, family: str, agent, limit: int }, ['query']),
    response: obj(
      {
        families: arr(
          obj({ family: str, server: str, tools: arr(obj({ name: str, description: str, score: { type: 'number' }, cid: str }, ['name', 'score', 'cid'])) }, ['family', 'server', 'tools']),
        ),
      },
      ['families'],
    ),
  },
  SetLambdaTool: {
    summary: 'Sets a lambda tool document on an agent',
    roles: ALL,
    request: obj({ agent, name: str, document: anyObject }, ['agent', 'name', 'document']),
    response: obj({ name: str, cid: str, version: int }, ['name', 'cid', 'version']),
    errors: ['conflict', 'not_found'],
  },
  DeleteLambdaTool: {
    summary: 'Deletes a lambda tool of an agent',
    roles: ALL,
    request: obj({ agent, name: str }, ['agent', 'name']),
    response: obj({ name: str, version: int }, ['name', 'version']),
    errors: ['conflict', 'not_found'],
  },
  AuthorizeSigner: {
    summary: 'Lets a key act for the account with a role',
    roles: OWNER,
    request: obj({ principal: str, role: ref('Role'), agents: arr(str) }, ['principal', 'role']),
    response: obj({ signer: obj({ principal: str, role: ref('Role'), agents: arr(str) }, ['principal', 'role']) }, ['signer']),
  },
  RevokeSigner: { summary: 'The key may no longer act for the account', roles: OWNER, request: obj({ principal: str }, ['principal']), response: obj({ revoked: bool }, ['revoked']) },
  SetToolPermission: {
    summary: "A tool's permission level (null: inherited)",
    roles: OWNER,
    request: obj({ server: str, tool: str, permission: { enum: ['act', 'always_ask', null] } }, ['server', 'tool', 'permission']),
    response: obj({ server: str, tool: str, permission: level, inherited: level, overridden: bool }, ['server', 'tool', 'permission', 'inherited', 'overridden']),
    errors: ['not_found'],
  },
  ListApprovals: { summary: "The account's pending approvals, oldest first", roles: WRITERS, request: nothing, response: obj({ approvals: arr(anyObject) }, ['approvals']) },
  ApproveToolCall: {
    summary: 'Approves an always_ask call; the runtime re-sends it',
    roles: OWNER,
    request: obj({ approvalId: str }, ['approvalId']),
    response: obj({ approval: anyObject }, ['approval']),
    errors: ['not_found', 'conflict'],
  },
  DenyToolCall: {
    summary: 'Denies an always_ask call',
    roles: OWNER,
    request: obj({ approvalId: str }, ['approvalId']),
    response: obj({ approval: anyObject }, ['approval']),
    errors: ['not_found', 'conflict'],
  },
  ListToolChanges: {
    summary: "A pinned server's held tool changes with diffs and warnings",
    roles: WRITERS,
    request: obj({ server: str, status: str }),
    response: obj({ changes: arr(anyObject) }, ['changes']),
  },
  AcceptToolChange: { summary: 'The held contract becomes the accepted one', roles: WRITERS, request: review, response: reviewed, errors: ['not_found', 'conflict'] },
  RejectToolChange: { summary: 'The change stays held and is not asked about again', roles: WRITERS, request: review, response: reviewed, errors: ['not_found', 'conflict'] },
  ListAuditEvents: {
    summary: 'The audit log: who changed what, when',
    roles: OWNER,
    request: obj({ limit: int, cursor: str, action: str, targetKind: str, target: str, signer: str, since: str, until: str }),
    response: obj({ events: arr(anyObject), nextCursor: str }, ['events']),
  },
  ListInputRequests: { summary: "The account's input requests waiting for a person", roles: WRITERS, request: nothing, response: obj({ inputRequests: arr(anyObject) }, ['inputRequests']) },
  AnswerInputRequest: {
    summary: "Answers a server's question; the runtime re-sends the call",
    roles: OWNER,
    request: obj({ id: str, action: { enum: ['accept', 'decline', 'cancel'] }, content: anyObject, key: str, inputRequestId: str }, ['id', 'action']),
    response: obj({ inputRequest: anyObject }, ['inputRequest']),
    errors: ['not_found', 'input_refused'],
  },
  SetVendorConnection: {
    summary: "Lights up a vendor's built-in servers with its token",
    roles: WRITERS,
    request: obj({ vendor: str, accessToken: str, refreshToken: str, expiresAt: str }, ['vendor', 'accessToken']),
    response: obj({ vendor: str, servers: arr(ref('RedactedMcpServer')) }, ['vendor', 'servers']),
  },
  DeleteVendorConnection: {
    summary: "The vendor's built-ins go dark and leave every grant",
    roles: WRITERS,
    request: obj({ vendor: str }, ['vendor']),
    response: obj({ vendor: str, servers: arr(str) }, ['vendor', 'servers']),
    errors: ['not_found'],
  },
  CreateAgentToken: {
    summary: "A bearer token of the agent's MCP endpoint, shown this once",
    roles: OWNER,
    request: obj({ agent, name: str, expiresInDays: int, userMayApprove: bool }, ['agent']),
    response: { allOf: [ref('AgentTokenView'), obj({ token: str }, ['token'])] },
    errors: ['not_found', 'quota_exceeded'],
  },
  ListAgentTokens: {
    summary: "An agent's endpoint tokens (never a token or its hash)",
    roles: OWNER,
    request: obj({ agent }, ['agent']),
    response: obj({ agent: str, tokens: arr(ref('AgentTokenView')) }, ['agent', 'tokens']),
    errors: ['not_found'],
  },
  RevokeAgentToken: {
    summary: 'The endpoint refuses the token from then on',
    roles: OWNER,
    request: obj({ id: str }, ['id']),
    response: obj({ id: str, revoked: bool }, ['id', 'revoked']),
    errors: ['not_found'],
  },
  ListSignInRequests: { summary: "OAuth sign-ins to the account's agent endpoints waiting for a decision", roles: OWNER, request: nothing, response: obj({ signIns: arr(anyObject) }, ['signIns']) },
  DecideSignIn: {
    summary: 'Approves or denies an OAuth sign-in; the browser that started it opens continueUrl',
    roles: OWNER,
    request: obj({ id: str, decision: { enum: ['approve', 'deny'] } }, ['id', 'decision']),
    response: obj({ id: str, decision: { enum: ['approve', 'deny'] }, continueUrl: str }, ['id', 'decision', 'continueUrl']),
    errors: ['not_found', 'conflict'],
  },
  ListCalls: {
    summary: "The account's recorded calls (metadata only), newest first, filtered and paged",
    roles: WRITERS,
    request: obj({ agent, server: str, tool: str, outcome: { enum: ['ok', 'failed', 'refused', 'error', 'lost'] }, since: str, until: str, limit: int, cursor: str }),
    response: obj({ calls: arr(ref('CallView')), nextCursor: str }, ['calls']),
  },
  GetCallFigures: {
    summary: 'Per server: calls, error rate, p50 and p95 duration over the last hour and 24 hours',
    roles: WRITERS,
    request: obj({ server: str }),
    response: obj({ at: str, servers: arr(obj({ server: str, lastHour: ref('CallFigures'), lastDay: ref('CallFigures') }, ['server', 'lastHour', 'lastDay'])) }, ['at', 'servers']),
  },
  ListTasks: {
    summary: "The account's brokered tasks (one agent's when named), newest first, without their results",
    roles: WRITERS,
    request: obj({ agent, limit: int }),
    response: obj({ tasks: arr(taskView) }, ['tasks']),
    errors: ['not_found', 'timeout', 'transport_error'],
  },
  GetTask: {
    summary: 'One brokered task as it stands',
    roles: WRITERS,
    request: obj({ task: str }, ['task']),
    response: obj({ task: taskView }, ['task']),
    errors: ['not_found', 'timeout', 'transport_error'],
  },
  CancelTask: {
    summary: "Asks a task's server to cancel it; the task ends cancelled",
    roles: WRITERS,
    request: obj({ task: str }, ['task']),
    response: obj({ task: taskView }, ['task']),
    errors: ['not_found', 'timeout', 'transport_error'],
  },
};

/** The action types, in the map's order. */
export const ACTION_TYPES = Object.keys(ActionTypes) as ActionType[];

/** Schemas the action schemas refer to. */
export const ACTION_COMPONENTS: Record<string, JsonSchema> = {
  Role: { enum: ['OWNER', 'WRITER', 'AGENT'] },
  AgentTokenView: obj(
    {
      id: str,
      agent: str,
      name: str,
      createdAt: str,
      expiresAt: { type: ['string', 'null'] },
      revokedAt: { type: ['string', 'null'] },
      state: { enum: ['active', 'expired', 'revoked'] },
      userMayApprove: bool,
    },
    ['id', 'agent', 'name', 'createdAt', 'expiresAt', 'revokedAt', 'state', 'userMayApprove'],
  ),
  AgentDefinition: obj({ mcpServers: arr(str), inputs: obj({ forms: { enum: ['person', 'runtime'] } }) }, ['mcpServers']),
  AgentView: obj({ id: str, name: str, definition: ref('AgentDefinition'), grants: obj({ mcpServers: arr(str) }, ['mcpServers']), createdAt: str, updatedAt: str }, [
    'id',
    'name',
    'definition',
    'grants',
    'createdAt',
    'updatedAt',
  ]),
  McpServerConfigInput: obj(
    {
      url: { type: 'string', format: 'uri' },
      transport: str,
      headers: { type: 'object', additionalProperties: str },
      secretHeaders: { type: 'object', additionalProperties: str, writeOnly: true },
      secretRefs: { type: 'object', additionalProperties: str },
      auth: { enum: ['oauth', 'bearer', 'headers', 'none'] },
      token: { type: 'string', writeOnly: true },
      oauth: obj(
        {
          clientId: str,
          clientSecret: { type: 'string', writeOnly: true },
          grant: { enum: ['authorization_code', 'client_credentials'] },
          privateKey: { type: 'string', writeOnly: true },
          keyAlg: str,
          scope: str,
        },
        ['clientId'],
      ),
      pin: { enum: ['off', 'review', 'strict'] },
    },
    ['url'],
  ),
  CallView: obj(
    {
      id: str,
      at: str,
      agent: obj({ id: str, name: str }, ['id']),
      run: str,
      callId: str,
      server: str,
      tool: str,
      code: str,
      outcome: { enum: ['ok', 'refused', 'error', 'lost'] },
      durationMs: int,
      era: { enum: ['modern', 'legacy'] },
      approvalId: str,
      inputRequestId: str,
      taskId: str,
    },
    ['id', 'at', 'agent', 'run', 'callId', 'tool', 'code', 'outcome', 'durationMs'],
  ),
  CallFigures: obj({ calls: int, failed: int, errorRate: { type: 'number' }, p50Ms: { type: ['integer', 'null'] }, p95Ms: { type: ['integer', 'null'] } }, [
    'calls',
    'failed',
    'errorRate',
    'p50Ms',
    'p95Ms',
  ]),
  RedactedMcpServer: obj(
    {
      id: str,
      name: str,
      url: str,
      transport: { type: ['string', 'null'] },
      headerNames: arr(str),
      secretHeaderNames: arr(str),
      hasSecrets: bool,
      auth: { enum: ['oauth', 'bearer', 'headers', 'none'] },
      builtin: bool,
      era: { enum: ['modern', 'legacy'] },
      protocolVersion: str,
      tools: arr(anyObject),
      status: anyObject,
      pin: { enum: ['off', 'review', 'strict'] },
      pendingReviews: int,
      createdAt: str,
      updatedAt: str,
    },
    ['id', 'name', 'url', 'tools', 'status', 'createdAt', 'updatedAt'],
  ),
};
