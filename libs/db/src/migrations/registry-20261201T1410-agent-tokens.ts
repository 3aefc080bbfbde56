import { sql, type Kysely } from 'kysely';

/**
 * Agent-scoped bearer tokens of the MCP endpoint (`/v1/agents/<agent>/mcp`): issued, listed and
 * revoked by the account's OWNER. Only the SHA-256 of a token is kept (`token_hash`, unique): the
 * token itself is shown once, when it is issued. A revoked token keeps its row (`revoked_at`) so
 * that the owner's list says what happened to it; the rows go with their agent.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.agent_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (c) => c.notNull().references('registry.agents.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('agent_tokens_account_agent')
    .on('registry.agent_tokens')
    .columns(['account_id', 'agent_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.agent_tokens').execute();
}
