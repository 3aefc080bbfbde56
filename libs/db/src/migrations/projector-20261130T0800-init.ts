import { sql, type Kysely } from 'kysely';
import { agentToolsQuery } from './agent-tools-view.js';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS projector`.execute(db);
  await db.schema
    .createTable('projector.tool_documents')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('doc_cbor', 'bytea', (c) => c.notNull())
    .addPrimaryKeyConstraint('tool_documents_pk', ['account_id', 'server', 'name'])
    .execute();
  await db.schema
    .createIndex('tool_documents_cid')
    .on('projector.tool_documents')
    .columns(['account_id', 'cid'])
    .execute();
  await db.schema
    .createTable('projector.projected_servers')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('tools', 'jsonb', (c) => c.notNull())
    // A deleted server keeps its row (no tools) so a late event of the same incarnation cannot revive it.
    .addColumn('deleted', 'boolean', (c) => c.notNull().defaultTo(false))
    .addPrimaryKeyConstraint('projected_servers_pk', ['account_id', 'server'])
    .execute();
  // Each agent's grant and the version of its tool set. The set itself (name → cid) is derived
  // from the granted servers' maps (projected_servers.tools) minus names its lambdas hold, so a
  // contract change writes the server's map once and only bumps each agent's version; rows stay
  // small (no TOAST), and fillfactor leaves room for HOT updates of version and pending.
  await sql`
    CREATE TABLE projector.agent_sets (
      account_id text NOT NULL,
      agent_id text NOT NULL,
      servers text[] NOT NULL,
      revision integer NOT NULL,
      version integer NOT NULL DEFAULT 1,
      -- this agent's latest agent-tools-changed events, kept while their change is open (crash recovery)
      pending jsonb,
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT agent_sets_pk PRIMARY KEY (account_id, agent_id)
    ) WITH (fillfactor = 70)`.execute(db);
  await sql`CREATE INDEX agent_sets_servers ON projector.agent_sets USING gin (servers)`.execute(db);
  // Changes whose agent-tools-changed events are not all confirmed published yet: a change's row
  // is written with it and deleted once JetStream acknowledged every event (crash recovery).
  await db.schema
    .createTable('projector.open_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    // The change's diff, shared by every agent whose pending entry does not carry its own.
    .addColumn('diff', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('projector.lambda_tools')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('doc_cbor', 'bytea', (c) => c.notNull())
    .addPrimaryKeyConstraint('lambda_tools_pk', ['account_id', 'agent_id', 'name'])
    .execute();
  // The agent's effective mcp tool set as readers (the proxy, ListAgentTools) see it: every tool
  // of every granted, projected server, minus names a lambda of the agent holds (the conflicts).
  await sql`CREATE VIEW projector.agent_tools AS ${agentToolsQuery('lambda-held')}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP SCHEMA projector CASCADE`.execute(db);
}
