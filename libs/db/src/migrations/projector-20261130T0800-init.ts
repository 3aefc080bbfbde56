import { sql, type Kysely } from 'kysely';

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
  await db.schema.createIndex('tool_documents_cid').on('projector.tool_documents').columns(['account_id', 'cid']).execute();
  await db.schema
    .createTable('projector.projected_servers')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('server_id', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('tools', 'jsonb', (c) => c.notNull())
    // The diff whose agent-tools-changed events are not all published yet (crash recovery).
    .addColumn('pending', 'jsonb')
    .addPrimaryKeyConstraint('projected_servers_pk', ['account_id', 'server'])
    .execute();
  await db.schema
    .createTable('projector.agent_tools')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('servers', sql`text[]`, (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('tools', 'jsonb', (c) => c.notNull())
    .addColumn('conflicts', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    // The event of this agent's last change while it is not yet published (crash recovery).
    .addColumn('pending', 'jsonb')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('agent_tools_pk', ['account_id', 'agent_id'])
    .execute();
  await sql`CREATE INDEX agent_tools_servers ON projector.agent_tools USING gin (servers)`.execute(db);
  await db.schema
    .createTable('projector.lambda_tools')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('doc_cbor', 'bytea', (c) => c.notNull())
    .addPrimaryKeyConstraint('lambda_tools_pk', ['account_id', 'agent_id', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP SCHEMA projector CASCADE`.execute(db);
}
