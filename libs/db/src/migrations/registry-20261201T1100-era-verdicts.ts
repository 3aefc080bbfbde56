import { sql, type Kysely } from 'kysely';

/**
 * The era verdict of each server (MCP 2026-07-28 or the 2025 era): what the first discovery
 * learnt about how to talk to it, so discovery and every proxy instance connect with no probe.
 *
 * One row per (account, server name), whatever the kind of server (custom or built-in), holding
 * the verdict of one auth context: a SHA-256 of the URL and the headers it was probed with (never
 * a secret). A verdict is used only by a connect whose auth context is the same; another context
 * probes again and replaces it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.era_verdicts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('registry.accounts.id').onDelete('cascade'))
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('auth_context', 'text', (c) => c.notNull())
    // CBOR of the verdict: {era, protocolVersion, discover | transport}.
    .addColumn('verdict_cbor', 'bytea', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('era_verdicts_pk', ['account_id', 'server'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.era_verdicts').execute();
}
