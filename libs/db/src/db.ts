import { Kysely, PostgresDialect } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import pg from 'pg';
import type { Database } from './schema.js';
import { typedPool } from './unavailable.js';
import * as registryInit from './migrations/registry-20261130T0800-init.js';
import * as registryPermissions from './migrations/registry-20261130T0900-permissions.js';
import * as registryOAuth from './migrations/registry-20261130T0910-oauth.js';
import * as registryBuiltins from './migrations/registry-20261130T1000-builtins.js';
import * as registryBuiltinUpkeep from './migrations/registry-20261201T0800-builtin-upkeep.js';
import * as registryEraVerdicts from './migrations/registry-20261201T1100-era-verdicts.js';
import * as registrySignerAgents from './migrations/registry-20261201T1200-signer-agents.js';
import * as registryAgentTokens from './migrations/registry-20261201T1410-agent-tokens.js';
import * as registryPinsAudit from './migrations/registry-20261201T1415-pins-audit.js';
import * as registryHeldTools from './migrations/registry-20261201T1420-held-tools.js';
import * as registryEventOutbox from './migrations/registry-20261201T1525-event-outbox.js';
import * as registryAgentTokenUserApproval from './migrations/registry-20261201T1710-agent-token-user-approval.js';
import * as registryOAuthSignIns from './migrations/registry-20261201T1700-oauth-sign-ins.js';
import * as registrySignInRequester from './migrations/registry-20261206T0300-sign-in-requester.js';
import * as registryAuthorizationServerRole from './migrations/registry-20261206T1200-authorization-server-role.js';
import * as registryDiscoveryOwed from './migrations/registry-20261207T0600-discovery-owed.js';
import * as activityCalls from './migrations/activity-20261206T0500-calls.js';
import * as proxyTasks from './migrations/proxy-20261206T0500-tasks.js';
import * as proxyTaskAnswerers from './migrations/proxy-20261206T1140-task-answerers.js';
import * as projectorHeldTools from './migrations/projector-20261201T1415-held-tools.js';
import * as projectorInit from './migrations/projector-20261130T0800-init.js';
import * as projectorSearch from './migrations/projector-20261130T0900-search.js';
import * as projectorNameConflicts from './migrations/projector-20261201T0900-mcp-name-conflicts.js';

// bigint counts come back as strings by default; ours fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));

export type Db = Kysely<Database>;

export interface DbOptions {
  /** Hosts that may be reached over plain http, enforced by the mcp_servers CHECK constraint. */
  allowHttpHosts?: string[];
  max?: number;
  applicationName?: string;
  /** Told about errors of idle connections (logged by services; the pool recovers by itself). */
  onIdleError?: (err: Error) => void;
  /**
   * A role every connection takes on connecting (`SET ROLE` as a connection setting): its grants,
   * not the login's, decide what the pool may do (`AUTHORIZATION_SERVER_ROLE`).
   */
  role?: string;
}

/** The authorization server's database role (created, with its grants, by the registry's migrations). */
export const AUTHORIZATION_SERVER_ROLE = 'mcpx_authorization_server';

/** Opens a pool. The allow-list travels as a connection setting so the CHECK constraint sees it. */
export function createDb(url: string, opts: DbOptions = {}): Db {
  const hosts = (opts.allowHttpHosts ?? []).join(',').replace(/[^A-Za-z0-9.:,*\-[\]]/g, '');
  const settings = [
    ...(hosts === '' ? [] : [`-c mcpx.allow_http_hosts=${hosts}`]),
    ...(opts.role !== undefined ? [`-c role=${opts.role.replace(/[^a-z0-9_]/g, '')}`] : []),
  ];
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'mcpx',
    options: settings.length === 0 ? undefined : settings.join(' '),
  });
  // An idle connection that the server drops (a restart, a failover, an admin's terminate) emits
  // an error on the pool; unheard, it would end the process. The pool replaces the connection.
  // A checked-out connection has no pool listener (the pool removes it while the client is lent):
  // one that drops between two statements (a transaction, a held lock) emitted an unheard 'error'
  // (57P01 on a restart) and ended the process. Every client gets its own listener for good; its
  // next query fails (the caller sees the error), and the pool discards it on release.
  // A dropped connection may say so more than once (the server's message, then the socket's end,
  // heard by either listener): it is told once per connection. The clients told are the lost
  // ones: a statement on one fails as Postgres unavailable (`typedPool`).
  const lost = new WeakSet<object>();
  const tell = (err: Error, client: object): void => {
    if (lost.has(client)) return;
    lost.add(client);
    opts.onIdleError?.(err);
  };
  pool.on('error', (err, client) => tell(err, client));
  pool.on('connect', (client) => {
    client.on('error', (err) => tell(err, client));
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: typedPool(pool, lost) }) });
}

/** Migration sets, one per service schema, each with its own history table in that schema. */
const MIGRATIONS = {
  registry: {
    '20261130T0800-init': registryInit,
    '20261130T0900-permissions': registryPermissions,
    '20261130T0910-oauth': registryOAuth,
    '20261130T1000-builtins': registryBuiltins,
    '20261201T0800-builtin-upkeep': registryBuiltinUpkeep,
    '20261201T1100-era-verdicts': registryEraVerdicts,
    '20261201T1200-signer-agents': registrySignerAgents,
    '20261201T1410-agent-tokens': registryAgentTokens,
    '20261201T1415-pins-audit': registryPinsAudit,
    '20261201T1420-held-tools': registryHeldTools,
    '20261201T1525-event-outbox': registryEventOutbox,
    '20261201T1700-oauth-sign-ins': registryOAuthSignIns,
    '20261201T1710-agent-token-user-approval': registryAgentTokenUserApproval,
    '20261206T0300-sign-in-requester': registrySignInRequester,
    '20261206T1200-authorization-server-role': registryAuthorizationServerRole,
    '20261207T0600-discovery-owed': registryDiscoveryOwed,
  },
  projector: {
    '20261130T0800-init': projectorInit,
    '20261130T0900-search': projectorSearch,
    '20261201T0900-mcp-name-conflicts': projectorNameConflicts,
    '20261201T1415-held-tools': projectorHeldTools,
  },
  // Written by the proxy (its call log), read by the registry: both bring it up to date at their start.
  activity: {
    '20261206T0500-calls': activityCalls,
  },
  proxy: {
    '20261206T0500-tasks': proxyTasks,
    '20261206T1140-task-answerers': proxyTaskAnswerers,
  },
} satisfies Record<string, Record<string, Migration>>;

export type SchemaName = keyof typeof MIGRATIONS;

/** Brings one service's schema up to date. Safe to run from several instances at once. */
export async function migrate(db: Kysely<any>, schema: SchemaName): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS[schema] },
    migrationTableSchema: schema,
    migrationTableName: 'kysely_migration',
    migrationLockTableName: 'kysely_migration_lock',
  });
  await db.schema.createSchema(schema).ifNotExists().execute();
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    throw new Error(`migration of ${schema} failed${failed ? ` at ${failed.migrationName}` : ''}: ${String(error)}`);
  }
}
