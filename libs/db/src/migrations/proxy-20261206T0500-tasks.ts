import { sql, type Kysely } from 'kysely';

/**
 * The proxy's own schema: the tasks it brokers (docs/tasks.md). The proxy creates a task's row
 * before the caller hears of it, polls it under a lease held in the row (`lease_owner`,
 * `lease_until`: exactly one instance polls a task, another takes it over once the lease lapses),
 * and keeps its result, bounded, until it is taken or the task's ttl ends. No other service
 * writes here; the registry reads tasks through the proxy over NATS.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('proxy.tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('run', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('remote_name', 'text', (c) => c.notNull())
    .addColumn('upstream_task_id', 'text', (c) => c.notNull())
    .addColumn('dialect', 'text', (c) => c.notNull())
    .addColumn('protocol_version', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text')
    .addColumn('auth_context', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status_message', 'text')
    .addColumn('poll_interval_ms', 'integer', (c) => c.notNull())
    .addColumn('next_poll_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('result_cbor', 'bytea')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('input_request_id', 'text')
    .addColumn('polls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('taken_at', 'timestamptz')
    .execute();
  // The pollers' query: open tasks due for a poll.
  await db.schema
    .createIndex('tasks_due')
    .on('proxy.tasks')
    .columns(['next_poll_at'])
    .where(sql.ref('finished_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('tasks_by_agent')
    .on('proxy.tasks')
    .columns(['account_id', 'agent_id', 'created_at'])
    .execute();
  await db.schema.createIndex('tasks_expired').on('proxy.tasks').columns(['expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('proxy.tasks').execute();
}
