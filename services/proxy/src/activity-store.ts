import { sql } from 'kysely';
import type { Db } from '@mcpx/db';
import type { CallOutcome } from './call-metrics.js';

/** One call as the log keeps it: metadata only, never an argument or a result. */
export interface CallRecord {
  account: string;
  /** When the call arrived (ms since the epoch). */
  at: number;
  agent: string;
  run: string;
  callId: string;
  /** Absent when the call was refused before its tool document was found. */
  server: string | undefined;
  tool: string;
  code: string;
  outcome: CallOutcome;
  durationMs: number;
  era: 'modern' | 'legacy' | undefined;
  approvalId: string | undefined;
  inputRequestId: string | undefined;
  taskId: string | undefined;
}

/** Where the recorder writes batches and trims the log. */
export interface ActivityStore {
  write(rows: readonly CallRecord[]): Promise<void>;
  /** Deletes calls older than `before`, then each named account's calls past `maxPerAccount`; returns how many went. */
  prune(before: Date, accounts: Iterable<string>, maxPerAccount: number): Promise<number>;
}

/** Rows deleted per statement, so retention never holds a long lock. */
const PRUNE_BATCH = 10_000;

/**
 * `activity.calls` in Postgres. A batch is one INSERT of column arrays (`unnest`): fourteen
 * parameters whatever the batch's size, so the proxy's cost per row is a few array pushes.
 */
export class PostgresActivityStore implements ActivityStore {
  constructor(private readonly db: Db) {}

  async write(rows: readonly CallRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <T>(f: (r: CallRecord) => T): T[] => rows.map(f);
    await sql`
      INSERT INTO activity.calls (account_id, at, agent, run, call_id, server, tool, code, outcome, duration_ms, era, approval_id, input_request_id, task_id)
      SELECT a, to_timestamp(t / 1000.0), ag, r, c, s, tl, cd, o, d, e, ap, ir, tk
      FROM unnest(
        ${col((r) => r.account)}::text[], ${col((r) => r.at)}::float8[], ${col((r) => r.agent)}::text[], ${col((r) => r.run)}::text[],
        ${col((r) => r.callId)}::text[], ${col((r) => r.server ?? null)}::text[], ${col((r) => r.tool)}::text[], ${col((r) => r.code)}::text[],
        ${col((r) => r.outcome)}::text[], ${col((r) => r.durationMs)}::int[], ${col((r) => r.era ?? null)}::text[], ${col((r) => r.approvalId ?? null)}::text[],
        ${col((r) => r.inputRequestId ?? null)}::text[], ${col((r) => r.taskId ?? null)}::text[]
      ) AS u(a, t, ag, r, c, s, tl, cd, o, d, e, ap, ir, tk)`.execute(this.db);
  }

  async prune(before: Date, accounts: Iterable<string>, maxPerAccount: number): Promise<number> {
    let total = 0;
    for (;;) {
      const r =
        await sql`DELETE FROM activity.calls WHERE id IN (SELECT id FROM activity.calls WHERE at < ${before} ORDER BY at LIMIT ${PRUNE_BATCH})`.execute(
          this.db,
        );
      const n = Number(r.numAffectedRows ?? 0);
      total += n;
      if (n < PRUNE_BATCH) break;
    }
    for (const account of accounts) {
      // The newest call past the cap, found along the account's index (in SQL: its time keeps its
      // microseconds); it and everything older go, a batch at a time.
      for (;;) {
        const r = await sql`
          DELETE FROM activity.calls WHERE id IN (
            SELECT id FROM activity.calls
            WHERE account_id = ${account}
              AND (at, id) <= (SELECT at, id FROM activity.calls WHERE account_id = ${account} ORDER BY at DESC, id DESC OFFSET ${maxPerAccount} LIMIT 1)
            ORDER BY at DESC, id DESC LIMIT ${PRUNE_BATCH})`.execute(this.db);
        const n = Number(r.numAffectedRows ?? 0);
        total += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    return total;
  }
}
