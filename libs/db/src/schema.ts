import type { ColumnType, Generated } from 'kysely';
import type {
  AgentSetsTable,
  AgentToolsTable,
  LambdaToolsTable,
  OpenChangesTable,
  ProjectedServersTable,
  ToolDocumentsTable,
} from './schema-projector.js';
import type { Timestamp } from './timestamp.js';

/** registry schema: owned by the registry service. */
export interface AccountsTable {
  id: string;
  principal: string;
  created_at: Timestamp;
}

export interface SignersTable {
  account_id: string;
  principal: string;
  role: 'OWNER' | 'AGENT' | 'WRITER';
  /** AGENT signers: the ids of the agents they may act for (JSON array); null for other roles. */
  agents: ColumnType<string[] | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface AgentsTable {
  id: string;
  account_id: string;
  name: string;
  definition_cbor: Uint8Array;
  revision: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface McpServersTable {
  id: string;
  account_id: string;
  name: string;
  /** Kept beside config_cbor so the https-only CHECK constraint can see it. */
  url: string;
  config_cbor: Uint8Array;
  tools_cbor: Uint8Array;
  /** sha-256 of the canonical encoding of the tool list: "changed" is a comparison of these. */
  tools_hash: string;
  generation: number;
  status_cbor: Uint8Array;
  next_probe_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** A pinned server's list as the server last gave it (`tools_cbor` is then the accepted contracts); null when not pinned. */
  discovered_cbor: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
  /** Hash of `discovered_cbor` ('' when not pinned): a pinned discovery with no change compares only these. */
  discovered_hash: ColumnType<string, string | undefined, string>;
  /** A pinned server's held changes (`ServerStatus.heldTools`, CBOR); null when none. */
  held_cbor: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
  /**
   * When the config was saved without a discovery of it recorded since (null: its last save was
   * discovered): a save sets it, the record of a discovery that started from that save clears it.
   */
  discovery_owed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** A contract an owner accepted (contract pinning), per server and remote tool name. */
export interface ToolContractsTable {
  account_id: string;
  server_id: string;
  tool: string;
  cid: string;
  tool_cbor: Uint8Array;
  accepted_by: string;
  accepted_at: Timestamp;
}

/** A changed or new contract a discovery held for review; one per tool. */
export interface ToolChangesTable {
  account_id: string;
  server_id: string;
  tool: string;
  cid: string;
  tool_cbor: Uint8Array;
  previous_cid: string | null;
  kind: 'new' | 'changed';
  compatible: boolean;
  status: 'pending' | 'rejected';
  detected_at: Timestamp;
  decided_by: string | null;
  decided_at: Date | null;
}

/** The account's audit log: append-only (a trigger refuses UPDATE, TRUNCATE and all but the retention job's DELETE). */
export interface AuditEventsTable {
  id: Generated<number>;
  account_id: string;
  at: Timestamp;
  signer: string;
  role: string;
  action: string;
  target_kind: string;
  target: string;
  before: ColumnType<unknown, string | null | undefined, never>;
  after: ColumnType<unknown, string | null | undefined, never>;
}

export interface SecretsTable {
  account_id: string;
  name: string;
  key_id: string;
  /** 12-byte IV ‖ ciphertext ‖ 16-byte tag. */
  ciphertext: Uint8Array;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** OAuth state of one MCP server (seed 001): client and pending authorization, tokens; sealed. */
export interface OAuthConnectionsTable {
  server_id: string;
  account_id: string;
  client_key_id: string | null;
  /** Sealed JSON: client information as received, PKCE verifier, discovery state. */
  client_sealed: Uint8Array | null;
  tokens_key_id: string | null;
  /** Sealed JSON: the tokens exactly as the authorization server returned them. */
  tokens_sealed: Uint8Array | null;
  tokens_expire_at: Date | null;
  /** The server URL the tokens were issued for (sent only while the server keeps that URL). */
  tokens_server_url: string | null;
  /** SHA-256 (hex) of the pending authorization's `state`. */
  state_hash: string | null;
  state_expires_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The owner's permission of one tool (remote name), overriding the inherited level. */
export interface ToolPermissionsTable {
  account_id: string;
  server_id: string;
  tool: string;
  permission: 'act' | 'always_ask';
  updated_at: Timestamp;
}

/** An account's connection to a vendor (seed 001): its OAuth tokens, sealed; lends built-ins their credential. */
export interface VendorConnectionsTable {
  id: string;
  account_id: string;
  vendor: string;
  tokens_key_id: string;
  tokens_sealed: Uint8Array;
  expires_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The last discovery of a built-in server for an account (absent: its fallback list serves). */
export interface BuiltinDiscoveriesTable {
  account_id: string;
  slug: string;
  tools_cbor: Uint8Array;
  tools_hash: string;
  generation: number;
  status_cbor: Uint8Array;
  /** When a built-in in `unknown` or `error` is probed again; null when it is fine. */
  next_probe_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  updated_at: Timestamp;
}

/** The owner's per-tool permission overrides of a built-in, per vendor connection (incarnation). */
export interface BuiltinToolPermissionsTable {
  account_id: string;
  connection_id: string;
  /** `builtin:<slug>:<connection id>`. */
  server_id: string;
  tool: string;
  permission: 'act' | 'always_ask';
  updated_at: Timestamp;
}

/** The era verdict of a server for one auth context (see the era-verdicts migration). */
export interface EraVerdictsTable {
  account_id: string;
  /** The server's name (a custom server's or a built-in's slug). */
  server: string;
  /** SHA-256 (hex) of the URL and the headers the verdict was probed with. */
  auth_context: string;
  verdict_cbor: Uint8Array;
  updated_at: Timestamp;
}

/** An agent-scoped bearer token of the MCP endpoint: only its SHA-256 is kept (see the agent-tokens migration). */
export interface AgentTokensTable {
  id: string;
  account_id: string;
  agent_id: string;
  name: string;
  /** SHA-256 (hex) of the token. */
  token_hash: string;
  created_at: Timestamp;
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The token's holder may approve its own always_ask calls (the endpoint's elicitation). */
  user_may_approve: ColumnType<boolean, boolean | undefined, boolean>;
}

/** An OAuth sign-in to the agent endpoint, from the pending request to the signed-in client (see the oauth-sign-ins migration). */
export interface OAuthSignInsTable {
  id: string;
  account_id: string;
  agent_id: string;
  client_id: string;
  client_name: string;
  redirect_uri: string;
  resource: string;
  scope: string | null;
  state: string | null;
  code_challenge: string;
  /** SHA-256 (hex) of the binding cookie of the browser that started the request. */
  browser_hash: string;
  status: 'pending' | 'approved' | 'denied' | 'code_issued' | 'active' | 'ended';
  continue_hash: string | null;
  code_hash: string | null;
  code_expires_at: Date | null;
  token_id: string | null;
  created_at: Timestamp;
  expires_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  ended_at: Date | null;
  end_reason: string | null;
  /** SHA-256 (hex) of the client address that asked for the sign-in (null on rows written before it was kept). */
  requester_hash: string | null;
}

/** A refresh token of an OAuth sign-in (its SHA-256), current or spent. */
export interface OAuthRefreshTokensTable {
  token_hash: string;
  sign_in_id: string;
  created_at: Timestamp;
  expires_at: Date;
  spent_at: Date | null;
}

/** An event committed with its change and not yet acknowledged by JetStream (the registry's outbox). */
export interface EventOutboxTable {
  id: ColumnType<string, never, never>;
  subject: string;
  /** The event's payload, as JSON. */
  payload: ColumnType<unknown, string, string>;
  msg_id: string;
  created_at: ColumnType<Date, never, never>;
}

/** activity schema: written by the proxy only (one row per call, metadata only), read by the registry. */
export interface ActivityCallsTable {
  id: Generated<number>;
  account_id: string;
  at: Timestamp;
  agent: string;
  run: string;
  call_id: string;
  server: string | null;
  tool: string;
  code: string;
  outcome: 'ok' | 'refused' | 'error' | 'lost';
  duration_ms: number;
  era: 'modern' | 'legacy' | null;
  approval_id: string | null;
  input_request_id: string | null;
  task_id: string | null;
}

/** proxy schema: owned by the proxy service (docs/tasks.md). */
export interface TasksTable {
  id: string;
  account_id: string;
  agent_id: string;
  run: string;
  server: string;
  tool: string;
  remote_name: string;
  upstream_task_id: string;
  dialect: string;
  protocol_version: string;
  session_id: string | null;
  auth_context: string;
  state: string;
  status_message: string | null;
  poll_interval_ms: number;
  next_poll_at: Timestamp;
  expires_at: Timestamp;
  lease_owner: string | null;
  lease_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  result_cbor: Uint8Array | null;
  error_code: string | null;
  error_message: string | null;
  input_request_id: string | null;
  /** JSON: what the task's call declared it answers (`{forms?, sampling?, roots?, formsByRuntime?}`); null: a person answers all. */
  answerers: ColumnType<string | null, string | null | undefined, string | null>;
  polls: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  taken_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface Database {
  'registry.accounts': AccountsTable;
  'registry.signers': SignersTable;
  'registry.agents': AgentsTable;
  'registry.mcp_servers': McpServersTable;
  'registry.secrets': SecretsTable;
  'registry.tool_permissions': ToolPermissionsTable;
  'registry.oauth_connections': OAuthConnectionsTable;
  'registry.vendor_connections': VendorConnectionsTable;
  'registry.builtin_discoveries': BuiltinDiscoveriesTable;
  'registry.builtin_tool_permissions': BuiltinToolPermissionsTable;
  'registry.era_verdicts': EraVerdictsTable;
  'registry.agent_tokens': AgentTokensTable;
  'registry.oauth_sign_ins': OAuthSignInsTable;
  'registry.oauth_refresh_tokens': OAuthRefreshTokensTable;
  'registry.tool_contracts': ToolContractsTable;
  'registry.tool_changes': ToolChangesTable;
  'registry.audit_events': AuditEventsTable;
  'registry.event_outbox': EventOutboxTable;
  'projector.tool_documents': ToolDocumentsTable;
  'projector.projected_servers': ProjectedServersTable;
  'projector.agent_sets': AgentSetsTable;
  'projector.agent_tools': AgentToolsTable;
  'projector.lambda_tools': LambdaToolsTable;
  'projector.open_changes': OpenChangesTable;
  'activity.calls': ActivityCallsTable;
  'proxy.tasks': TasksTable;
}
