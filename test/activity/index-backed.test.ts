import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';
import { CALL_LOG_REGISTRY, createCallLogAgents, seedCalls } from './seed-calls.js';

/** Calls seeded for one account: enough that a sequential scan is the planner's last choice. */
const CALLS = 100_000;

/**
 * A large account's log is read along its indexes, whatever the filter: Postgres' own counters of
 * the table say every ListCalls was an index scan and none a sequential scan. (Its speed over a
 * million calls is measured by `pnpm bench registry`, never asserted.)
 */
describe('ListCalls over a large account: every filter is answered along an index', { timeout: 240_000 }, () => {
  let h: RegistryHarness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await RegistryHarness.start(CALL_LOG_REGISTRY);
    api = h.api();
    await seedCalls(h.sql, api.principal, await createCallLogAgents(api), CALLS);
  });

  afterAll(async () => {
    await h?.stop();
  });

  const scans = async (): Promise<{ seq: number; idx: number }> => {
    const r = await sql<{
      seq: number;
      idx: number;
    }>`SELECT seq_scan::int AS seq, coalesce(idx_scan, 0)::int AS idx FROM pg_stat_user_tables WHERE schemaname = 'activity' AND relname = 'calls'`.execute(
      h.sql,
    );
    return r.rows[0]!;
  };

  it('pages by agent, server, tool, outcome, time and cursor with no sequential scan, and pages past the end are empty', async () => {
    const week = new Date(Date.now() - 7 * 86_400_000).toISOString();
    const sixDays = new Date(Date.now() - 6 * 86_400_000).toISOString();
    const first = await api.act<{ nextCursor?: string }>('ListCalls', { server: 's03' });
    expect(first.nextCursor).toBeDefined();
    const before = await eventually(async () => scans(), 5_000, 'table statistics');
    const filters: Array<Record<string, unknown>> = [
      {},
      { agent: 'agent-2' },
      { server: 's03' },
      { server: 's03', tool: 's03__tool_3' },
      { tool: 's11__tool_1' },
      { outcome: 'failed' },
      { outcome: 'lost' },
      { agent: 'agent-1', outcome: 'failed' },
      { server: 's11', since: week, until: sixDays },
      { since: week, until: sixDays },
      { server: 's03', cursor: first.nextCursor },
    ];
    for (const f of filters) {
      const page = await api.act<{ calls: Array<{ server?: string; agent: { name?: string } }> }>('ListCalls', f);
      expect(page.calls.length, JSON.stringify(f)).toBe(50);
      if (typeof f.server === 'string') expect(page.calls.every((c) => c.server === f.server)).toBe(true);
      if (typeof f.agent === 'string') expect(page.calls.every((c) => c.agent.name === f.agent)).toBe(true);
    }
    // Past the end, and a made-up cursor: empty pages.
    expect(
      (await api.act<{ calls: unknown[] }>('ListCalls', { cursor: `${Date.now() - 40 * 86_400_000}.1` })).calls,
    ).toEqual([]);
    expect((await api.act<{ calls: unknown[] }>('ListCalls', { server: 'nope' })).calls).toEqual([]);
    // Each backend reports its counters when it goes idle: wait until every query above is counted.
    const after = await eventually(
      async () => {
        const s = await scans();
        return s.idx - before.idx >= filters.length + 2 ? s : undefined;
      },
      30_000,
      'the index scans counted',
    );
    expect(after.seq - before.seq).toBe(0);
  });
});
