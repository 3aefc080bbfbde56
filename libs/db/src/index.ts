export { AUTHORIZATION_SERVER_ROLE, createDb, migrate } from './db.js';
export { listenChannel, type ChannelListener, type ChannelListenerOptions } from './listen.js';
export type { Db, DbOptions, SchemaName } from './db.js';
export { PostgresUnavailableError, isPostgresUnavailable } from './unavailable.js';
export type {
  Database,
  AccountsTable,
  SignersTable,
  AgentsTable,
  McpServersTable,
  SecretsTable,
  OAuthConnectionsTable,
  VendorConnectionsTable,
  BuiltinDiscoveriesTable,
  BuiltinToolPermissionsTable,
  ToolPermissionsTable,
  EraVerdictsTable,
  AgentTokensTable,
  ToolContractsTable,
  ToolChangesTable,
  AuditEventsTable,
  ActivityCallsTable,
  TasksTable,
} from './schema.js';
export type {
  AgentSetsTable,
  AgentToolsTable,
  LambdaToolsTable,
  OpenChangesTable,
  PendingToolsEvent,
  ProjectedServersTable,
  ToolDocumentsTable,
  ToolsDiff,
} from './schema-projector.js';
