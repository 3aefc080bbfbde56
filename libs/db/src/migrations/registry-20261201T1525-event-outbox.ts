import { sql, type Kysely } from 'kysely';

/**
 * The registry's outbox: an event is written in the transaction that commits its change and
 * published after it (with its message id, so JetStream stores it once); a row left by a registry
 * that died between its commit and its publish is published by the next sweep of any instance.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('registry.event_outbox')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('msg_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registry.event_outbox').execute();
}
