import { sql, type Kysely } from 'kysely';

/**
 * `registry.oauth_sign_ins.requester_hash`: who asked for a sign-in, as the SHA-256 (hex) of the
 * client address the authorization request came from (never the address itself), so that pending
 * sign-ins are bounded per address as well as per client document and per account: the authorize
 * endpoint is open to anyone, and no one address may take an account's slots. Rows written
 * before it have none (they count against no address). The partial indexes keep the per-address
 * and the global counts of pending sign-ins to the pending rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('registry.oauth_sign_ins').addColumn('requester_hash', 'text').execute();
  await db.schema
    .createIndex('oauth_sign_ins_pending_requester')
    .on('registry.oauth_sign_ins')
    .columns(['requester_hash', 'expires_at'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema
    .createIndex('oauth_sign_ins_pending_expiry')
    .on('registry.oauth_sign_ins')
    .column('expires_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('registry.oauth_sign_ins_pending_expiry').execute();
  await db.schema.dropIndex('registry.oauth_sign_ins_pending_requester').execute();
  await db.schema.alterTable('registry.oauth_sign_ins').dropColumn('requester_hash').execute();
}
