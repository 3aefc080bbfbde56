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

/** The columns of {@link CallColumns}, in the INSERT's order. */
const COLUMNS = [
  'account',
  'at',
  'agent',
  'run',
  'callId',
  'server',
  'tool',
  'code',
  'outcome',
  'durationMs',
  'era',
  'approvalId',
  'inputRequestId',
  'taskId',
] as const satisfies ReadonlyArray<keyof CallRecord>;

type Column<K extends keyof CallRecord> = CallRecord[K][];

/**
 * Calls held for the log, column by column: what the recorder holds and a batch the store writes.
 * No object is made per call: a call's row lived until its batch was written, past the young
 * generation, so each was copied and promoted by the collector; and the INSERT sends columns
 * anyway. Times are whole milliseconds, so `at` stays an array of plain numbers.
 */
export class CallColumns {
  account: Column<'account'> = [];
  at: Column<'at'> = [];
  agent: Column<'agent'> = [];
  run: Column<'run'> = [];
  callId: Column<'callId'> = [];
  server: Column<'server'> = [];
  tool: Column<'tool'> = [];
  code: Column<'code'> = [];
  outcome: Column<'outcome'> = [];
  durationMs: Column<'durationMs'> = [];
  era: Column<'era'> = [];
  approvalId: Column<'approvalId'> = [];
  inputRequestId: Column<'inputRequestId'> = [];
  taskId: Column<'taskId'> = [];

  get length(): number {
    return this.account.length;
  }

  /** The first `n` calls, taken out (the rest stay, in order). */
  take(n: number): CallColumns {
    const out = new CallColumns();
    for (const k of COLUMNS) (out[k] as unknown[]) = (this[k] as unknown[]).splice(0, n);
    return out;
  }

  /** The first `n` of `front` put back before the calls held now. */
  prepend(front: CallColumns, n: number): void {
    for (const k of COLUMNS) (this[k] as unknown[]) = (front[k] as unknown[]).slice(0, n).concat(this[k]);
  }

  /** Call `i` as a row (for readers and tests; the write path never makes one). */
  row(i: number): CallRecord {
    const r = {} as Record<string, unknown>;
    for (const k of COLUMNS) r[k] = this[k][i];
    return r as unknown as CallRecord;
  }

  rows(): CallRecord[] {
    return Array.from({ length: this.length }, (_, i) => this.row(i));
  }
}

/** Where the recorder writes batches and trims the log. */
export interface ActivityStore {
  write(calls: CallColumns): Promise<void>;
  /** Deletes calls older than `before`, then each named account's calls past `maxPerAccount`; returns how many went. */
  prune(before: Date, accounts: Iterable<string>, maxPerAccount: number): Promise<number>;
}

/** A string a Postgres array literal may hold bare within its quotes. */
const PLAIN = /^[^"\\]*$/;

/**
 * A `text[]` literal of the values (absent ones NULL): each quoted, and escaped only when it holds
 * a quote or a backslash (the driver's own writer ran two replacements on every value).
 */
export function textArray(values: ReadonlyArray<string | undefined>): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    out += v === undefined ? 'NULL' : PLAIN.test(v) ? `"${v}"` : `"${v.replace(/["\\]/g, '\\$&')}"`;
  }
  return `${out}}`;
}

/** Rows deleted per statement, so retention never holds a long lock. */
const PRUNE_BATCH = 10_000;

/**
 * `activity.calls` in Postgres. A batch is one INSERT of column arrays (`unnest`): fourteen
 * parameters whatever the batch's size, each an array literal written in one pass.
 */
export class PostgresActivityStore implements ActivityStore {
  constructor(private readonly db: Db) {}

  async write(c: CallColumns): Promise<void> {
    if (c.length === 0) return;
    const t = textArray;
    await sql`
      INSERT INTO activity.calls (account_id, at, agent, run, call_id, server, tool, code, outcome, duration_ms, era, approval_id, input_request_id, task_id)
      SELECT a, to_timestamp(t / 1000.0), ag, r, c, s, tl, cd, o, d, e, ap, ir, tk
      FROM unnest(
        ${t(c.account)}::text[], ${`{${c.at.join(',')}}`}::float8[], ${t(c.agent)}::text[], ${t(c.run)}::text[],
        ${t(c.callId)}::text[], ${t(c.server)}::text[], ${t(c.tool)}::text[], ${t(c.code)}::text[],
        ${t(c.outcome)}::text[], ${`{${c.durationMs.join(',')}}`}::int[], ${t(c.era)}::text[], ${t(c.approvalId)}::text[],
        ${t(c.inputRequestId)}::text[], ${t(c.taskId)}::text[]
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
