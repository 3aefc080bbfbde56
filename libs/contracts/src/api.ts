export type { McpServerConfigInput, AgentDefinition, AgentView } from './action-components.js';

/** The signed envelope of `POST /v1/actions`. */
export interface ActionEnvelope {
  signer: string;
  account: string;
  ts: number;
  nonce: string;
  action: { type: string; [key: string]: unknown };
  sig: string;
}

export const ActionTypes = {
  ListMcpServers: 'ListMcpServers',
  SetMcpServer: 'SetMcpServer',
  RefreshMcpServer: 'RefreshMcpServer',
  DeleteMcpServer: 'DeleteMcpServer',
  /**
   * `{name}` → `{server, authorizationUrl}`: a fresh OAuth authorization for a server with
   * `config.auth: 'oauth'`; the URL is a single-use ticket of the registry that binds the
   * authorization to the browser opening it (`/v1/oauth/start?ticket=…`).
   */
  AuthorizeMcpServer: 'AuthorizeMcpServer',
  CreateAgent: 'CreateAgent',
  UpdateAgent: 'UpdateAgent',
  GetAgent: 'GetAgent',
  ListAgents: 'ListAgents',
  ListAgentTools: 'ListAgentTools',
  /**
   * `{agent, tool, arguments?, run?, approvalId?, timeoutMs?}` → `{result, run}`: one call through
   * the proxy (the CLI's `mcpx call`, no NATS). Without `run` the call's run is ended at once; a
   * named run stays open until `EndRun`.
   */
  InvokeTool: 'InvokeTool',
  /** `{run}` → `{run, ended: true}`: the signer's account's run ends (`mcp.runs.ended.<acct>.<run>`); every proxy closes its connections. */
  EndRun: 'EndRun',
  /** `{principal, role, agents?}` → `{signer: {principal, role, agents?}}`; OWNER only. An AGENT signer names the agents it acts for. */
  AuthorizeSigner: 'AuthorizeSigner',
  /** `{principal}` → `{revoked}`; OWNER only: the key may no longer act for the account. */
  RevokeSigner: 'RevokeSigner',
  /** `{agent, name, document}` → `{name, cid, version}`; refused (`conflict`) over an mcp tool's name. */
  SetLambdaTool: 'SetLambdaTool',
  /** `{agent, name}` → `{name, version}`; refused (`conflict`) for an mcp document. */
  DeleteLambdaTool: 'DeleteLambdaTool',
  /** `{agent, names}` → the admitted names and their provider tool formats (the promotion rule). */
  PromoteTools: 'PromoteTools',
  /** `{query, family?, agent?, limit?}` → `{families: [{family, server, tools: [{name, description, score, cid}]}]}`. */
  SearchTools: 'SearchTools',
  /** `{server, tool, permission: 'act'|'always_ask'|null}` → `{server, tool, permission}`; OWNER only; null = inherited. */
  SetToolPermission: 'SetToolPermission',
  /** `{}` → `{approvals: ApprovalView[]}`: the account's pending approvals, oldest first. */
  ListApprovals: 'ListApprovals',
  /** `{approvalId}` → `{approval}`; OWNER only. The runtime then re-sends the call with it. */
  ApproveToolCall: 'ApproveToolCall',
  /** `{approvalId}` → `{approval}`; OWNER only. */
  DenyToolCall: 'DenyToolCall',
  /** `{}` → `{inputRequests: InputRequestView[]}`: the account's input requests waiting for a person, oldest first. */
  ListInputRequests: 'ListInputRequests',
  /**
   * `{id, action: 'accept'|'decline'|'cancel', content?, key?}` → `{inputRequest}`; OWNER only.
   * `content` is checked against the requested schema; `key` names the question when a round asks
   * several. The runtime then re-sends the call with `inputRequestId`.
   */
  AnswerInputRequest: 'AnswerInputRequest',
  /** `{vendor, accessToken, refreshToken?, expiresAt?}` → `{vendor, servers: RedactedMcpServer[]}`: lights up the vendor's built-in servers. */
  SetVendorConnection: 'SetVendorConnection',
  /** `{server?, status?}` → `{changes}`: a pinned server's held tool changes, each with its diff and warnings. */
  ListToolChanges: 'ListToolChanges',
  /** `{server, tool, cid}` → `{server, tool, cid, decision}`: the held contract becomes the accepted one; OWNER (WRITER per policy). */
  AcceptToolChange: 'AcceptToolChange',
  /** `{server, tool, cid}` → `{…, decision: 'rejected'}`: the change stays held and is not asked about again. */
  RejectToolChange: 'RejectToolChange',
  /** `{limit?, cursor?, action?, targetKind?, target?, signer?, since?, until?}` → `{events, nextCursor?}`; OWNER only. */
  ListAuditEvents: 'ListAuditEvents',
  /** `{vendor}` → `{vendor, servers: string[]}`: the vendor's built-ins go dark and leave every grant. */
  DeleteVendorConnection: 'DeleteVendorConnection',
  /**
   * `{agent, name?, expiresInDays?}` → `{token, id, ...AgentTokenView}`; OWNER only. A bearer token
   * of the agent's MCP endpoint, shown this once (only its hash is kept).
   */
  CreateAgentToken: 'CreateAgentToken',
  /** `{agent}` → `{agent, tokens: AgentTokenView[]}`; OWNER only. Never a token or its hash. */
  ListAgentTokens: 'ListAgentTokens',
  /** `{id}` → `{id, revoked}`; OWNER only. The endpoint refuses the token from then on. */
  RevokeAgentToken: 'RevokeAgentToken',
  /** `{}` → `{signIns}`; OWNER only. OAuth sign-ins to the account's agent endpoints waiting for a decision. */
  ListSignInRequests: 'ListSignInRequests',
  /** `{id, decision: 'approve'|'deny'}` → `{id, decision, continueUrl}`; OWNER only. The browser that started the sign-in opens continueUrl. */
  DecideSignIn: 'DecideSignIn',
  /** `{agent?, server?, tool?, outcome?, since?, until?, limit?, cursor?}` → `{calls, nextCursor?}`: the call log (docs/activity.md). */
  ListCalls: 'ListCalls',
  /** `{server?}` → `{at, servers}`: per server, calls, error rate, p50 and p95 over 1 h and 24 h. */
  GetCallFigures: 'GetCallFigures',
  /** `{agent?, limit?}` → `{tasks}`: the account's brokered tasks (one agent's when named), newest first, never their results (docs/tasks.md#people). */
  ListTasks: 'ListTasks',
  /** `{task}` → `{task}`: one task as it stands. */
  GetTask: 'GetTask',
  /** `{task}` → `{task}`: asks the task's server to cancel it; it ends `cancelled` (one that had ended is answered as it stands). */
  CancelTask: 'CancelTask',
  /** `{task}` → `{result, taskId}`: a finished task's result as its call would have answered (bounded as a call's); an open one is `conflict`. */
  GetTaskResult: 'GetTaskResult',
} as const;
export type ActionType = (typeof ActionTypes)[keyof typeof ActionTypes];
