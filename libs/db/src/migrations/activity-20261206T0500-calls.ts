import { sql, type Kysely } from 'kysely';

/**
 * `activity.calls`: one row per call a proxy answered (docs/activity.md), written in batches by
 * the proxy (the schema's one writer) and read by the registry's `ListCalls` and
 * `GetCallFigures`. Metadata only: who called what, when, how it ended and how long it took,
 * never an argument or a result.
 *
 * Pages are newest first by `(at, id)`, so every index ends with `at DESC, id DESC` after the
 * account and the filter it serves: all calls, by agent, by server, by tool (a tool name holds its server's, so server and tool go along it), failed
 * ones (partial), and by time alone for retention. The account-wide index carries what the per-server figures read, so they are
 * answered from the index alone.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('activity.calls')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    // When the call arrived at the proxy.
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('agent', 'text', (c) => c.notNull())
    .addColumn('run', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text', (c) => c.notNull())
    // Null when the call was refused before its tool document was found.
    .addColumn('server', 'text')
    .addColumn('tool', 'text', (c) => c.notNull())
    // `ok` or the error code the caller got.
    .addColumn('code', 'text', (c) => c.notNull())
    // ok | refused | error | lost (what the code says about the server).
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('era', 'text')
    .addColumn('approval_id', 'text')
    .addColumn('input_request_id', 'text')
    .addColumn('task_id', 'text')
    .execute();
  await sql`CREATE INDEX calls_account_at ON activity.calls (account_id, at DESC, id DESC) INCLUDE (server, outcome, duration_ms)`.execute(
    db,
  );
  await sql`CREATE INDEX calls_account_agent_at ON activity.calls (account_id, agent, at DESC, id DESC)`.execute(db);
  await sql`CREATE INDEX calls_account_server_at ON activity.calls (account_id, server, at DESC, id DESC)`.execute(db);
  await sql`CREATE INDEX calls_account_tool_at ON activity.calls (account_id, tool, at DESC, id DESC)`.execute(db);
  // Retention by age deletes the oldest calls of every account.
  await sql`CREATE INDEX calls_at ON activity.calls (at)`.execute(db);
  await sql`CREATE INDEX calls_account_failed_at ON activity.calls (account_id, at DESC, id DESC) WHERE outcome <> 'ok'`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('activity.calls').execute();
}
