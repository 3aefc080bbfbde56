import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS registry`.execute(db);
  // The https-only rule lives in the database: a connection may allow plain http for listed hosts
  // through the `mcpx.allow_http_hosts` setting (comma-separated host[:port], or `*` in the
  // local development profile), set by the operator.
  await sql`
    CREATE OR REPLACE FUNCTION registry.url_allowed(url text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
      SELECT url ~ '^https://'
        OR (url ~ '^http://' AND '*' = ANY (
              string_to_array(replace(coalesce(current_setting('mcpx.allow_http_hosts', true), ''), ' ', ''), ',')))
        OR (url ~ '^http://' AND substring(url from '^http://([^/?#]+)') = ANY (
              string_to_array(replace(coalesce(current_setting('mcpx.allow_http_hosts', true), ''), ' ', ''), ',')))
        OR (url ~ '^http://' AND substring(url from '^http://([^/?#:]+)') = ANY (
              string_to_array(replace(coalesce(current_setting('mcpx.allow_http_hosts', true), ''), ' ', ''), ',')))
    $$`.execute(db);
  await db.schema
    .createTable('registry.accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('principal', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('registry.signers')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('principal', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role IN ('OWNER', 'AGENT', 'WRITER')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('signers_pk', ['account_id', 'principal'])
    .execute();
  await db.schema
    .createTable('registry.agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('definition_cbor', 'bytea', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('agents_account_name', ['account_id', 'name'])
    .execute();
  await db.schema
    .createTable('registry.mcp_servers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull().check(sql`registry.url_allowed(url)`))
    .addColumn('config_cbor', 'bytea', (c) => c.notNull())
    .addColumn('tools_cbor', 'bytea', (c) => c.notNull())
    .addColumn('tools_hash', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status_cbor', 'bytea', (c) => c.notNull())
    // When a server in error is to be probed again (exponential backoff); null when it is fine.
    .addColumn('next_probe_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('mcp_servers_account_name', ['account_id', 'name'])
    .execute();
  await sql`CREATE INDEX mcp_servers_next_probe ON registry.mcp_servers (next_probe_at) WHERE next_probe_at IS NOT NULL`.execute(
    db,
  );
  await db.schema
    .createTable('registry.secrets')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('ciphertext', 'bytea', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('secrets_pk', ['account_id', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP SCHEMA registry CASCADE`.execute(db);
}
