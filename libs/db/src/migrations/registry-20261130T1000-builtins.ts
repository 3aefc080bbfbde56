import { sql, type Kysely } from 'kysely';

/**
 * Built-in servers (docs/servers.md#built-in-servers). A built-in is a static descriptor in code, never a row of
 * mcp_servers: what an account holds is its vendor connection (the OAuth tokens that lend the
 * credential, sealed with the secrets key ring) and, once a built-in has been discovered for it,
 * the last good tool list of that discovery (until then the descriptor's fallback list serves).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.vendor_connections')
    // A new id per connection (not per update): the incarnation of the vendor's built-ins.
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('vendor', 'text', (c) => c.notNull())
    .addColumn('tokens_key_id', 'text', (c) => c.notNull())
    .addColumn('tokens_sealed', 'bytea', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('vendor_connections_pk', ['account_id', 'vendor'])
    .execute();
  await db.schema
    .createTable('registry.builtin_discoveries')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('tools_cbor', 'bytea', (c) => c.notNull())
    .addColumn('tools_hash', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('status_cbor', 'bytea', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('builtin_discoveries_pk', ['account_id', 'slug'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.builtin_discoveries').execute();
  await db.schema.dropTable('registry.vendor_connections').execute();
}
