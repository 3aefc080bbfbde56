import { sql, type Kysely } from 'kysely';

/**
 * When a server's saved config was last written without a discovery of it recorded since (null:
 * its last save was discovered). Set by a save, cleared by the record of a discovery that started
 * from that save or a later one: a discovery lost with its registry (Postgres refused its record,
 * and the registry stopped before it could run it again) is found here by any registry.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('registry.mcp_servers').addColumn('discovery_owed_at', 'timestamptz').execute();
  await sql`CREATE INDEX mcp_servers_discovery_owed ON registry.mcp_servers (discovery_owed_at)
    WHERE discovery_owed_at IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX registry.mcp_servers_discovery_owed`.execute(db);
  await db.schema.alterTable('registry.mcp_servers').dropColumn('discovery_owed_at').execute();
}
