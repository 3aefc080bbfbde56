import type { Kysely } from 'kysely';

/**
 * An AGENT signer acts for the agents it is bound to, and no other: `agents` holds their ids.
 * AGENT signers authorized before this existed are bound to none (they must be authorized again
 * with the agents they serve): reading every agent of the account was the hole this closes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('registry.signers').addColumn('agents', 'jsonb').execute();
}
