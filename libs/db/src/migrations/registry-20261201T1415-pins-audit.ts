import { sql, type Kysely } from 'kysely';

/**
 * Contract pinning and the audit log.
 *
 * - `mcp_servers.discovered_cbor` / `discovered_hash`: a pinned server's list as the server last
 *   gave it (its `tools_cbor` is then what agents get: the accepted contracts). Empty for servers
 *   that are not pinned.
 * - `tool_contracts`: the contracts an owner accepted, per server and remote tool name.
 * - `tool_changes`: a changed or new contract a discovery held for review (one per tool: a later
 *   change replaces an earlier one), `pending` or `rejected`.
 * - `audit_events`: append-only. A trigger refuses every UPDATE and TRUNCATE, and every DELETE
 *   except the retention job's, which sets `mcpx.audit_retention = 'on'` for its transaction.
 *   No foreign key: an account's deletion must not take its log with it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('registry.mcp_servers')
    .addColumn('discovered_cbor', 'bytea')
    .addColumn('discovered_hash', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .createTable('registry.tool_contracts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('server_id', 'text', (c) => c.notNull().references('registry.mcp_servers.id').onDelete('cascade'))
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('tool_cbor', 'bytea', (c) => c.notNull())
    .addColumn('accepted_by', 'text', (c) => c.notNull())
    .addColumn('accepted_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('tool_contracts_pk', ['account_id', 'server_id', 'tool'])
    .execute();
  await db.schema
    .createTable('registry.tool_changes')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('server_id', 'text', (c) => c.notNull().references('registry.mcp_servers.id').onDelete('cascade'))
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('cid', 'text', (c) => c.notNull())
    .addColumn('tool_cbor', 'bytea', (c) => c.notNull())
    .addColumn('previous_cid', 'text')
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind IN ('new', 'changed')`))
    .addColumn('compatible', 'boolean', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('pending', 'rejected')`))
    .addColumn('detected_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('decided_by', 'text')
    .addColumn('decided_at', 'timestamptz')
    .addPrimaryKeyConstraint('tool_changes_pk', ['account_id', 'server_id', 'tool'])
    .execute();
  await db.schema
    .createTable('registry.audit_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('signer', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_kind', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('before', 'jsonb')
    .addColumn('after', 'jsonb')
    .execute();
  await sql`CREATE INDEX audit_events_account ON registry.audit_events (account_id, id DESC)`.execute(db);
  await sql`CREATE INDEX audit_events_account_action ON registry.audit_events (account_id, action, id DESC)`.execute(
    db,
  );
  await sql`CREATE INDEX audit_events_at ON registry.audit_events (at)`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION registry.audit_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND coalesce(current_setting('mcpx.audit_retention', true), '') = 'on' THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'registry.audit_events is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
    END
    $$`.execute(db);
  await sql`CREATE TRIGGER audit_events_no_update BEFORE UPDATE OR DELETE ON registry.audit_events FOR EACH ROW EXECUTE FUNCTION registry.audit_events_append_only()`.execute(
    db,
  );
  await sql`CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON registry.audit_events FOR EACH STATEMENT EXECUTE FUNCTION registry.audit_events_append_only()`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.audit_events').execute();
  await sql`DROP FUNCTION IF EXISTS registry.audit_events_append_only()`.execute(db);
  await db.schema.dropTable('registry.tool_changes').execute();
  await db.schema.dropTable('registry.tool_contracts').execute();
  await db.schema
    .alterTable('registry.mcp_servers')
    .dropColumn('discovered_cbor')
    .dropColumn('discovered_hash')
    .execute();
}
