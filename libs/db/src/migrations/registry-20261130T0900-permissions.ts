import { sql, type Kysely } from 'kysely';

/**
 * The owner's per-tool permission overrides (docs/call.md#permissions: the inherited level is a default). Keyed by the
 * server's id, not its name, so a server deleted and re-created under the same name starts from
 * the inherited levels again; the rows go with the server.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.tool_permissions')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('server_id', 'text', (c) => c.notNull().references('registry.mcp_servers.id').onDelete('cascade'))
    // The tool's remote name, as its server lists it.
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('permission', 'text', (c) => c.notNull().check(sql`permission IN ('act', 'always_ask')`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('tool_permissions_pk', ['account_id', 'server_id', 'tool'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.tool_permissions').execute();
}
