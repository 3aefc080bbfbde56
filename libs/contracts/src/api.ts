import type { ServerStatus, Transport } from './payloads.js';

/** `config` of SetMcpServer. Header values in `secretHeaders` are stored encrypted. */
export interface McpServerConfigInput {
  url: string;
  transport?: Transport;
  headers?: Record<string, string>;
  secretHeaders?: Record<string, string>;
  /** Header name → name of an existing account secret. */
  secretRefs?: Record<string, string>;
  /** `oauth`: run OAuth 2.1 against the server (a 401 with OAuth metadata yields an authorization URL). */
  auth?: 'oauth';
}

/** One entry of RedactedMcpServer.tools. */
export interface RedactedTool {
  name: string;
  toolName: string;
  description?: string;
  inputSchema?: unknown;
  /** The effective permission: the owner's override, else the one inherited from annotations. */
  permission?: 'act' | 'always_ask';
  /** True when `permission` is the owner's override rather than the inherited level. */
  permissionOverridden?: boolean;
}

/** An mcp_servers record as any response shows it: never a secret value. */
export interface RedactedMcpServer {
  id: string;
  name: string;
  url: string;
  transport: Transport | null;
  headerNames: string[];
  secretHeaderNames: string[];
  hasSecrets: boolean;
  tools: RedactedTool[];
  status: ServerStatus;
  createdAt: string;
  updatedAt: string;
}

export interface AgentDefinition {
  mcpServers: string[];
}

export interface AgentView {
  id: string;
  name: string;
  definition: AgentDefinition;
  grants: { mcpServers: string[] };
  createdAt: string;
  updatedAt: string;
}

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
  /** `{name}` → `{server, authorizationUrl}`: a fresh OAuth authorization for a server with `config.auth: 'oauth'`. */
  AuthorizeMcpServer: 'AuthorizeMcpServer',
  CreateAgent: 'CreateAgent',
  UpdateAgent: 'UpdateAgent',
  GetAgent: 'GetAgent',
  ListAgents: 'ListAgents',
  ListAgentTools: 'ListAgentTools',
  InvokeTool: 'InvokeTool',
  /** `{principal, role}` → `{signer: {principal, role}}`; OWNER only. */
  AuthorizeSigner: 'AuthorizeSigner',
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
} as const;
export type ActionType = (typeof ActionTypes)[keyof typeof ActionTypes];
