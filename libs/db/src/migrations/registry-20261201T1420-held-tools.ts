import type { Kysely } from 'kysely';

/**
 * A pinned server's held changes (`ServerStatus.heldTools`) in a column of their own, so that a
 * discovery's write of its status can never overwrite what a review decided meanwhile.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('registry.mcp_servers').addColumn('held_cbor', 'bytea').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('registry.mcp_servers').dropColumn('held_cbor').execute();
}
