import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { addTool, echoTool, errorTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

interface CallView {
  id: string;
  at: string;
  agent: { id: string; name?: string };
  run: string;
  callId: string;
  server?: string;
  tool: string;
  code: string;
  outcome: string;
  durationMs: number;
  era?: string;
  approvalId?: string;
}
interface Page {
  calls: CallView[];
  nextCursor?: string;
}

/** A value that must never reach the log: the arguments and the results stay out of it. */
const CANARY = 'canary-7f3a9c-argument-value';

describe('the call log: every call recorded off the call path, read back through ListCalls and GetCallFigures', () => {
  let system: ProxySystem;
  let modern: TestMcpServer;
  let legacy: TestMcpServer;
  let db: pg.Client;

  beforeAll(async () => {
    [system, modern, legacy] = await Promise.all([
      ProxySystem.start({ env: { ACTIVITY_FLUSH_MS: '50' } }),
      startTestMcpServer({ era: 'modern', tools: [echoTool(), addTool(), errorTool()] }),
      startTestMcpServer({ era: 'legacy' }),
    ]);
    await system.setServer('demo', modern.url);
    await system.setServer('old', legacy.url);
    await system.createAgent('alpha', ['demo', 'old'], 4);
    await system.createAgent('beta', ['demo'], 3);
    db = new pg.Client({ connectionString: system.db.url });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await system?.stop();
    await Promise.all([modern?.close(), legacy?.close()]);
  });

  /** The calls of the account once `n` are recorded (written in batches, so waited for). */
  async function calls(n: number, filters: Record<string, unknown> = {}): Promise<CallView[]> {
    return eventually(
      async () => {
        const page = await system.api.act<Page>('ListCalls', { limit: 200, ...filters });
        return page.calls.length >= n ? page.calls : undefined;
      },
      15_000,
      `${n} recorded calls`,
    );
  }

  it('records each call: time, agent, run, server, tool, outcome code, duration, era; never its arguments or result', async () => {
    const before = Date.now();
    await system.call('alpha', 'run-1', 'demo__echo', { text: CANARY });
    await system.call('alpha', 'run-1', 'old__echo', { text: 'legacy' });
    await system.call('beta', 'run-2', 'demo__add', { a: 2, b: 3 });
    expect((await system.callError('beta', 'run-2', 'demo__fail', {})).code).toBe('server_error');
    expect((await system.callError('alpha', 'run-1', 'demo__echo', { text: 5 })).code).toBe('invalid_arguments');
    expect((await system.callError('alpha', 'run-1', 'demo__nope', {})).code).toBe('not_found');

    const all = await calls(6);
    expect(all).toHaveLength(6);
    // Newest first.
    const times = all.map((c) => Date.parse(c.at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const c of all) {
      expect(Date.parse(c.at)).toBeGreaterThanOrEqual(before - 1_000);
      expect(c.durationMs).toBeGreaterThanOrEqual(0);
      expect(c.callId).toMatch(/\S/);
    }
    const byTool = (tool: string) => all.filter((c) => c.tool === tool);
    const [echo, invalid] = [
      byTool('demo__echo').find((c) => c.code === 'ok'),
      byTool('demo__echo').find((c) => c.code !== 'ok'),
    ];
    expect(echo).toMatchObject({
      agent: { id: system.agentId('alpha'), name: 'alpha' },
      run: 'run-1',
      server: 'demo',
      code: 'ok',
      outcome: 'ok',
      era: 'modern',
    });
    expect(invalid).toMatchObject({ server: 'demo', code: 'invalid_arguments', outcome: 'refused' });
    expect(byTool('old__echo')[0]).toMatchObject({ server: 'old', code: 'ok', era: 'legacy' });
    expect(byTool('demo__add')[0]).toMatchObject({
      agent: { id: system.agentId('beta'), name: 'beta' },
      run: 'run-2',
      code: 'ok',
    });
    expect(byTool('demo__fail')[0]).toMatchObject({ server: 'demo', code: 'server_error', outcome: 'error' });
    // A tool that was never found names no server.
    expect(byTool('demo__nope')[0]).toMatchObject({ code: 'not_found', outcome: 'refused' });
    expect(byTool('demo__nope')[0]!.server).toBeUndefined();

    // Neither the answer nor the table holds an argument or a result.
    expect(JSON.stringify(all)).not.toContain(CANARY);
    expect(JSON.stringify(all)).not.toContain('echo: ');
    const rows = await db.query('SELECT * FROM activity.calls');
    expect(rows.rows).toHaveLength(6);
    expect(JSON.stringify(rows.rows)).not.toContain(CANARY);
  });

  it('filters by agent (name or id), server, tool, outcome and time, each along its index', async () => {
    await calls(6);
    expect((await system.api.act<Page>('ListCalls', { agent: 'beta' })).calls.map((c) => c.tool).sort()).toEqual([
      'demo__add',
      'demo__fail',
    ]);
    expect((await system.api.act<Page>('ListCalls', { agent: system.agentId('beta') })).calls).toHaveLength(2);
    expect((await system.api.act<Page>('ListCalls', { server: 'old' })).calls.map((c) => c.tool)).toEqual([
      'old__echo',
    ]);
    expect((await system.api.act<Page>('ListCalls', { tool: 'demo__echo' })).calls).toHaveLength(2);
    expect(
      (await system.api.act<Page>('ListCalls', { server: 'demo', tool: 'demo__echo', outcome: 'ok' })).calls,
    ).toHaveLength(1);
    const failed = await system.api.act<Page>('ListCalls', { outcome: 'failed' });
    expect(failed.calls.map((c) => c.code).sort()).toEqual(['invalid_arguments', 'not_found', 'server_error']);
    expect((await system.api.act<Page>('ListCalls', { outcome: 'error' })).calls.map((c) => c.code)).toEqual([
      'server_error',
    ]);
    expect((await system.api.act<Page>('ListCalls', { agent: 'alpha', outcome: 'refused' })).calls).toHaveLength(2);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await system.api.act<Page>('ListCalls', { since: future })).calls).toEqual([]);
    expect(
      (await system.api.act<Page>('ListCalls', { until: new Date(Date.now() - 3_600_000).toISOString() })).calls,
    ).toEqual([]);
    expect(
      (
        await system.api.act<Page>('ListCalls', {
          since: new Date(Date.now() - 3_600_000).toISOString(),
          until: future,
        })
      ).calls,
    ).toHaveLength(6);
  });

  it('pages with a cursor: every call once, in order, then an empty end', async () => {
    const all = await calls(6);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page: Page = await system.api.act<Page>('ListCalls', {
        limit: 4,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      seen.push(...page.calls.map((c) => c.id));
      cursor = page.nextCursor;
      if (cursor === undefined) break;
    }
    expect(seen).toEqual(all.map((c) => c.id));
    // A page past the end is empty, not an error.
    const last = all.at(-1)!;
    expect((await system.api.act<Page>('ListCalls', { cursor: `${Date.parse(last.at)}.${last.id}` })).calls).toEqual(
      [],
    );
  });

  it('gives per-server figures over the last hour and 24 hours: calls, failed, error rate, p50 and p95', async () => {
    await calls(6);
    const { servers } = await system.api.act<{
      servers: Array<{
        server: string;
        lastHour: Record<string, number | null>;
        lastDay: Record<string, number | null>;
      }>;
    }>('GetCallFigures');
    const demo = servers.find((s) => s.server === 'demo')!;
    const old = servers.find((s) => s.server === 'old')!;
    // The call whose tool was never found names no server: not counted for one.
    expect(servers.map((s) => s.server).sort()).toEqual(['demo', 'old']);
    expect(demo.lastHour).toMatchObject({ calls: 4, failed: 2, errorRate: 0.5 });
    expect(demo.lastDay).toMatchObject({ calls: 4, failed: 2, errorRate: 0.5 });
    expect(old.lastHour).toMatchObject({ calls: 1, failed: 0, errorRate: 0 });
    expect(demo.lastHour.p50Ms).toBeTypeOf('number');
    expect(demo.lastHour.p95Ms as number).toBeGreaterThanOrEqual(demo.lastHour.p50Ms as number);
    const only = await system.api.act<{ servers: Array<{ server: string }> }>('GetCallFigures', { server: 'old' });
    expect(only.servers.map((s) => s.server)).toEqual(['old']);
  });
});
