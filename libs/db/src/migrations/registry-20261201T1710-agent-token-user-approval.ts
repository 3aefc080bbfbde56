import { sql, type Kysely } from 'kysely';

/**
 * `registry.agent_tokens.user_may_approve`: whether the holder of the token (the MCP client's
 * user) may approve the token's own `always_ask` calls, answering the endpoint's elicitation,
 * instead of waiting for the owner. Off unless the owner says so when issuing the token; every
 * existing token keeps waiting for the owner.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('registry.agent_tokens')
    .addColumn('user_may_approve', 'boolean', (c) => c.notNull().defaultTo(sql`false`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('registry.agent_tokens').dropColumn('user_may_approve').execute();
}
