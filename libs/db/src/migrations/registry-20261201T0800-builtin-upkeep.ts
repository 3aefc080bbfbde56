import { sql, type Kysely } from 'kysely';

/**
 * Built-ins get what custom servers have: the owner's per-tool permission overrides and a
 * background re-probe.
 *
 * Overrides of a built-in are keyed by its server id (`builtin:<slug>:<vendor connection id>`)
 * and go with the vendor connection: connecting the vendor again after a disconnect is a new
 * incarnation that starts from the inherited levels, as a custom server deleted and re-created
 * does. They live in their own table because `tool_permissions.server_id` references mcp_servers.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.builtin_tool_permissions')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('connection_id', 'text', (c) =>
      c.notNull().references('registry.vendor_connections.id').onDelete('cascade'),
    )
    // The built-in's server id, as events and tool documents carry it.
    .addColumn('server_id', 'text', (c) => c.notNull())
    // The tool's remote name, as its server lists it.
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('permission', 'text', (c) => c.notNull().check(sql`permission IN ('act', 'always_ask')`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('builtin_tool_permissions_pk', ['account_id', 'server_id', 'tool'])
    .execute();
  // When a built-in in `unknown` or `error` is to be probed again (backoff); null when it is fine.
  await db.schema.alterTable('registry.builtin_discoveries').addColumn('next_probe_at', 'timestamptz').execute();
  // Rows written before: one probe each (a built-in left in `error` is not stuck there); lit
  // built-ins with no row at all are scheduled by the registry when it starts.
  await sql`UPDATE registry.builtin_discoveries SET next_probe_at = now()`.execute(db);
  await sql`CREATE INDEX builtin_discoveries_next_probe ON registry.builtin_discoveries (next_probe_at) WHERE next_probe_at IS NOT NULL`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX registry.builtin_discoveries_next_probe`.execute(db);
  await db.schema.alterTable('registry.builtin_discoveries').dropColumn('next_probe_at').execute();
  await db.schema.dropTable('registry.builtin_tool_permissions').execute();
}
