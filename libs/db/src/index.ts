export { createDb, migrate } from './db.js';
export type { Db, DbOptions, SchemaName } from './db.js';
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
  ToolDocumentsTable,
  ProjectedServersTable,
  AgentSetsTable,
  AgentToolsTable,
  LambdaToolsTable,
  OpenChangesTable,
  ToolsDiff,
  PendingToolsEvent,
  EraVerdictsTable,
} from './schema.js';
