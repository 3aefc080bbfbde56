import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createDb, migrate, type ActivityCallsTable, type Db } from '@mcpx/db';
import {
  CallColumns,
  PostgresActivityStore,
  textArray,
  type CallRecord,
} from '../../services/proxy/src/activity-store.js';
import { createTestDatabase, type TestDatabase } from '../support/env.js';

/** Values a call's ids may carry that an array literal must not misread: quotes, backslashes, its own syntax. */
const HOSTILE = [
  'plain',
  '',
  'NULL',
  'null',
  'a"b',
  'a\\b',
  '\\"',
  '"',
  '\\',
  '{x,y}',
  'a,b',
  ' spaced ',
  "it's",
  'ünïcødé ✓ 🚀',
  '\u202e',
  'tab\there',
  'new\nline',
  '})); DROP TABLE activity.calls; --',
];

function columnsOf(rows: CallRecord[]): CallColumns {
  const c = new CallColumns();
  for (const r of rows) for (const [k, v] of Object.entries(r)) (c[k as keyof CallRecord] as unknown[]).push(v);
  return c;
}

describe('the call log store writes every value as it was given (array literals, real Postgres)', () => {
  let tdb: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = createDb(tdb.url);
    await migrate(db, 'activity');
  });

  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop().catch(() => undefined);
  });

  it('round-trips quotes, backslashes, braces, commas, NULL-like text, unicode and absent values', async () => {
    const base = Date.now() - 60_000;
    const rows: CallRecord[] = HOSTILE.map((v, i) => ({
      account: `acct-${v}`,
      at: base + i,
      agent: v,
      run: `${v}-run`,
      callId: `c${i}:${v}`,
      server: i % 3 === 0 ? undefined : v,
      tool: `${v}__tool`,
      code: i % 2 === 0 ? 'ok' : 'server_error',
      outcome: i % 2 === 0 ? 'ok' : 'error',
      durationMs: i * 7,
      era: i % 4 === 0 ? undefined : 'modern',
      approvalId: i % 5 === 0 ? v : undefined,
      inputRequestId: i % 6 === 0 ? v : undefined,
      taskId: i % 7 === 0 ? v : undefined,
    }));
    await new PostgresActivityStore(db).write(columnsOf(rows));
    const { rows: back } = await sql<
      Omit<ActivityCallsTable, 'at'> & { at: Date }
    >`SELECT * FROM activity.calls ORDER BY at`.execute(db);
    expect(back).toHaveLength(rows.length);
    back.forEach((b, i) => {
      const r = rows[i]!;
      expect({
        account: b.account_id,
        at: b.at.getTime(),
        agent: b.agent,
        run: b.run,
        callId: b.call_id,
        server: b.server ?? undefined,
        tool: b.tool,
        code: b.code,
        outcome: b.outcome,
        durationMs: b.duration_ms,
        era: b.era ?? undefined,
        approvalId: b.approval_id ?? undefined,
        inputRequestId: b.input_request_id ?? undefined,
        taskId: b.task_id ?? undefined,
      }).toEqual(r);
    });
  });

  it('writes nothing for an empty batch, and one INSERT for a large one', async () => {
    const store = new PostgresActivityStore(db);
    await store.write(new CallColumns());
    const before = (await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity.calls`.execute(db)).rows[0]!.n;
    const now = Date.now();
    const c = columnsOf(
      Array.from({ length: 5_000 }, (_, i) => ({
        account: 'acct-bulk',
        at: now - i,
        agent: 'ag',
        run: 'r',
        callId: `bulk-${i}`,
        server: 's',
        tool: 's__t',
        code: 'ok',
        outcome: 'ok',
        durationMs: 1,
        era: 'legacy',
        approvalId: undefined,
        inputRequestId: undefined,
        taskId: undefined,
      })),
    );
    await store.write(c);
    const after = (await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity.calls`.execute(db)).rows[0]!.n;
    expect(after - before).toBe(5_000);
  });

  it('quotes and escapes in one pass, only where a value needs it', () => {
    expect(textArray(['a', undefined, 'b"c', 'd\\e', ''])).toBe('{"a",NULL,"b\\"c","d\\\\e",""}');
    expect(textArray([])).toBe('{}');
  });
});
