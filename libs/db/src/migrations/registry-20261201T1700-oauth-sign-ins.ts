import { sql, type Kysely } from 'kysely';

/**
 * OAuth 2.1 sign-ins to the agent MCP endpoint, with the registry as the authorization server.
 *
 * `registry.oauth_sign_ins`: one row per authorization request, from the pending request the
 * owner consents to (short expiry, bound to the browser that started it by the hash of an
 * HttpOnly cookie, and to the approver's console by the hash of a continue nonce) through the
 * single-use authorization code (its hash, 60 s) to the signed-in client. The access token of a
 * signed-in client is a row of `registry.agent_tokens` (`token_id`), so the endpoint checks it
 * and hears of its revocation exactly like an agent token; the owner sees and revokes it there.
 *
 * `registry.oauth_refresh_tokens`: the hashes of a sign-in's refresh tokens, current and spent;
 * a spent one presented again revokes the whole sign-in (rotation with reuse detection).
 * Only hashes are ever stored; rows go with their account and agent.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.oauth_sign_ins')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (c) => c.notNull().references('registry.agents.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('scope', 'text')
    .addColumn('state', 'text')
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('browser_hash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('pending', 'approved', 'denied', 'code_issued', 'active', 'ended')`),
    )
    .addColumn('continue_hash', 'text')
    .addColumn('code_hash', 'text', (c) => c.unique())
    .addColumn('code_expires_at', 'timestamptz')
    .addColumn('token_id', 'text', (c) => c.references('registry.agent_tokens.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('decided_at', 'timestamptz')
    .addColumn('decided_by', 'text')
    .addColumn('ended_at', 'timestamptz')
    .addColumn('end_reason', 'text')
    .execute();
  await db.schema
    .createIndex('oauth_sign_ins_account_status')
    .on('registry.oauth_sign_ins')
    .columns(['account_id', 'status'])
    .execute();
  await db.schema
    .createTable('registry.oauth_refresh_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('sign_in_id', 'text', (c) => c.notNull().references('registry.oauth_sign_ins.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('spent_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('oauth_refresh_tokens_sign_in')
    .on('registry.oauth_refresh_tokens')
    .column('sign_in_id')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.oauth_refresh_tokens').execute();
  await db.schema.dropTable('registry.oauth_sign_ins').execute();
}
