import { sql, type Kysely } from 'kysely';

/**
 * OAuth state per MCP server (docs/servers.md#auth-methods, OAuth 2.1 for remote servers): the registered client and
 * the pending authorization (PKCE verifier, discovery), and the tokens, each sealed with the
 * secrets key ring. `state_hash` is the SHA-256 of the pending authorization's `state`, so the
 * callback finds its server without the state itself being stored in the clear.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.oauth_connections')
    .addColumn('server_id', 'text', (c) => c.primaryKey().references('registry.mcp_servers.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('client_key_id', 'text')
    .addColumn('client_sealed', 'bytea')
    .addColumn('tokens_key_id', 'text')
    .addColumn('tokens_sealed', 'bytea')
    .addColumn('tokens_expire_at', 'timestamptz')
    // The server URL the tokens were issued for: a server whose URL changed never gets them.
    .addColumn('tokens_server_url', 'text')
    .addColumn('state_hash', 'text', (c) => c.unique())
    .addColumn('state_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.oauth_connections').execute();
}
