import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

describe('the call log when Postgres refuses its writes, and its retention by age and count', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let db: pg.Client;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({
        env: {
          ACTIVITY_FLUSH_MS: '50',
          ACTIVITY_MAX_CALLS_PER_ACCOUNT: '1000',
          ACTIVITY_RETENTION_DAYS: '7',
          ACTIVITY_PRUNE_MS: '300',
        },
      }),
      startTestMcpServer({ era: 'modern', tools: [echoTool()] }),
    ]);
    await system.setServer('demo', upstream.url);
    await system.createAgent('agent', ['demo'], 1);
    db = new pg.Client({ connectionString: system.db.url });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await system?.stop();
    await upstream?.close();
  });

  const count = async (): Promise<number> =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM activity.calls')).rows[0]!.n;

  it('keeps answering calls while the log cannot be written, holds them, and writes them once it can', async () => {
    await system.call('agent', 'run', 'demo__echo', { text: 'first' });
    await eventually(async () => ((await count()) === 1 ? true : undefined), 15_000, 'the first call written');
    // The proxy's writes now fail in Postgres itself (the table is gone for the proxy).
    await db.query('ALTER TABLE activity.calls RENAME TO calls_away');
    for (let i = 0; i < 5; i++)
      expect((await system.call('agent', 'run', 'demo__echo', { text: `during ${i}` })).result.text).toBe(
        `echo: during ${i}`,
      );
    // Failed writes are counted where operators look.
    const metrics = async () => (await (await fetch(`${system.proxies[0]!.internalUrl}/metrics`)).text()).split('\n');
    await eventually(
      async () =>
        (await metrics()).some((l) => /^mcpx_activity_write_failures_total\S* [1-9]/.test(l)) ? true : undefined,
      15_000,
      'a failed write counted',
    );
    // Held meanwhile (a batch being retried is out of the count while its write is in flight).
    await eventually(
      async () =>
        (await metrics()).find((l) => l.startsWith('mcpx_activity_held'))?.endsWith(' 5') === true ? true : undefined,
      15_000,
      'five calls held',
    );
    await db.query('ALTER TABLE activity.calls_away RENAME TO calls');
    await eventually(
      async () => ((await count()) === 6 ? true : undefined),
      45_000,
      'the held calls written after the outage',
    );
    await eventually(
      async () =>
        (await metrics()).find((l) => l.startsWith('mcpx_activity_held'))?.endsWith(' 0') === true ? true : undefined,
      15_000,
      'nothing held',
    );
  });

  it('deletes calls past the retention age, and an account’s oldest calls past its cap', async () => {
    const account = system.api.principal;
    const agent = system.agentId('agent');
    // 1,200 calls of this account from the last hours, and 10 from 8 days ago (past 7 days).
    await db.query(
      `INSERT INTO activity.calls (account_id, at, agent, run, call_id, server, tool, code, outcome, duration_ms)
       SELECT $1, now() - make_interval(secs => 3600 + g), $2, 'seeded', 'c' || g, 'demo', 'demo__echo', 'ok', 'ok', 5 FROM generate_series(1, 1200) g`,
      [account, agent],
    );
    await db.query(
      `INSERT INTO activity.calls (account_id, at, agent, run, call_id, server, tool, code, outcome, duration_ms)
       SELECT 'another-account', now() - interval '8 days', 'x', 'old', 'o' || g, 'demo', 'demo__echo', 'ok', 'ok', 5 FROM generate_series(1, 10) g`,
    );
    const ownCalls = async (): Promise<number> =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM activity.calls WHERE account_id = $1 AND run = 'run'`,
          [account],
        )
      ).rows[0]!.n;
    // The real calls of this file so far (the test before made some; a retry of this one alone, none).
    const before = await ownCalls();
    // A new call marks the account as written; the next trim caps it and drops the old ones.
    await system.call('agent', 'run', 'demo__echo', { text: 'after' });
    await eventually(
      async () => {
        const r = await db.query<{ n: number; old: number }>(
          `SELECT count(*) FILTER (WHERE account_id = $1)::int AS n, count(*) FILTER (WHERE at < now() - interval '7 days')::int AS old FROM activity.calls`,
          [account],
        );
        return r.rows[0]!.n === 1000 && r.rows[0]!.old === 0 ? true : undefined;
      },
      30_000,
      'the log trimmed to 1,000 calls of the account and none past 7 days',
    );
    // The newest calls stay: the real ones of this file are among them, the one just made too.
    // (At least: a call of the test before may still have been on its way to the log when counted.)
    await eventually(async () => ((await ownCalls()) >= before + 1 ? true : undefined), 30_000, 'the real calls kept');
  });
});
