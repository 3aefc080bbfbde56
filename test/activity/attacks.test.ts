import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { WireError } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

interface Page {
  calls: Array<{ id: string; at: string; agent: { id: string }; tool: string }>;
  nextCursor?: string;
}

async function refusal(p: Promise<unknown>): Promise<WireError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error('the action succeeded, a refusal was expected');
}

describe('the call log under attack: hostile filters, forged cursors, another account, a signer without the role', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let intruder: ApiClient;
  let db: pg.Client;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { ACTIVITY_FLUSH_MS: '50' } }),
      startTestMcpServer({ era: 'modern', tools: [echoTool()] }),
    ]);
    await system.setServer('demo', upstream.url);
    await system.createAgent('victim-agent', ['demo'], 1);
    for (let i = 0; i < 3; i++) await system.call('victim-agent', 'victim-run', 'demo__echo', { text: `secret ${i}` });
    await eventually(
      async () => ((await system.api.act<Page>('ListCalls')).calls.length === 3 ? true : undefined),
      15_000,
      'the victim calls recorded',
    );
    // Another account on the same registry, with its own server, agent and one call.
    intruder = new ApiClient(system.api.apiUrl);
    await intruder.act('SetMcpServer', { name: 'demo', config: { url: upstream.url } });
    const { agent } = await intruder.act<{ agent: { id: string } }>('CreateAgent', {
      name: 'intruder-agent',
      definition: { mcpServers: ['demo'] },
    });
    await eventually(
      async () =>
        (await intruder.act<{ tools: unknown[] }>('ListAgentTools', { agent: agent.id })).tools.length > 0
          ? true
          : undefined,
      15_000,
      'intruder tools',
    );
    await system.client.call({
      account: intruder.principal,
      agent: agent.id,
      run: 'intruder-run',
      tool: 'demo__echo',
      arguments: { text: 'mine' },
    });
    await eventually(
      async () => ((await intruder.act<Page>('ListCalls')).calls.length === 1 ? true : undefined),
      15_000,
      'the intruder call recorded',
    );
    db = new pg.Client({ connectionString: system.db.url });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await system?.stop();
    await upstream?.close();
  });

  it.each([
    ['limit', { limit: 0 }],
    ['limit', { limit: 201 }],
    ['limit', { limit: 1.5 }],
    ['limit', { limit: '10' }],
    ['limit', { limit: -1 }],
    ['agent', { agent: '' }],
    ['agent', { agent: 'x'.repeat(129) }],
    ['agent', { agent: { $ne: null } }],
    ['server', { server: ['demo'] }],
    ['server', { server: 'demo\u0000' }],
    ['tool', { tool: 'demo__echo\nOR 1=1' }],
    ['tool', { tool: 42 }],
    ['outcome', { outcome: 'ok OR 1=1' }],
    ['outcome', { outcome: 'FAILED' }],
    ['since', { since: 'yesterday' }],
    ['since', { since: 1_700_000_000_000 }],
    ['until', { until: '2026-13-45T99:00:00Z' }],
    ['until', { until: '9'.repeat(100) }],
    ['cursor', { cursor: 'abc' }],
    ['cursor', { cursor: '1.0' }],
    ['cursor', { cursor: "1.1' OR '1'='1" }],
    ['cursor', { cursor: `${'9'.repeat(16)}.1` }],
    ['cursor', { cursor: `1.${'9'.repeat(19)}` }],
    ['cursor', { cursor: 12 }],
  ])('refuses a hostile %s with invalid_input naming it', async (field, filters) => {
    const err = await refusal(system.api.act('ListCalls', filters));
    expect(err.code).toBe('invalid_input');
    expect(err.details.field).toBe(field);
  });

  it('refuses a hostile server filter of GetCallFigures', async () => {
    const err = await refusal(system.api.act('GetCallFigures', { server: 'x'.repeat(200) }));
    expect(err.code).toBe('invalid_input');
    expect(err.details.field).toBe('server');
  });

  it('treats injection-looking text as a value: an empty page, and the log intact', async () => {
    for (const value of ["demo' OR '1'='1", 'demo"; DROP TABLE activity.calls; --', '%', '*', '\\']) {
      expect((await system.api.act<Page>('ListCalls', { server: value })).calls).toEqual([]);
      expect((await system.api.act<Page>('ListCalls', { tool: value })).calls).toEqual([]);
      expect((await system.api.act<Page>('ListCalls', { agent: value })).calls).toEqual([]);
    }
    expect((await db.query('SELECT count(*)::int AS n FROM activity.calls')).rows[0].n).toBe(4);
  });

  it("shows nothing of another account: its agent's id, its server's name, its cursor", async () => {
    const victim = (await system.api.act<Page>('ListCalls')).calls;
    const theirs = (await intruder.act<Page>('ListCalls')).calls;
    expect(theirs).toHaveLength(1);
    expect(theirs[0]!.tool).toBe('demo__echo');
    // The victim's agent id as the intruder's filter: an empty page.
    expect((await intruder.act<Page>('ListCalls', { agent: victim[0]!.agent.id })).calls).toEqual([]);
    expect((await intruder.act<Page>('ListCalls', { agent: 'victim-agent' })).calls).toEqual([]);
    // The victim's cursor in the intruder's hands pages the intruder's own log only.
    const cursor = `${Date.parse(victim[0]!.at) + 1}.${Number(victim[0]!.id) + 1}`;
    const paged = await intruder.act<Page>('ListCalls', { cursor });
    for (const c of paged.calls) expect(victim.map((v) => v.id)).not.toContain(c.id);
    // Figures: only the intruder's one call on its own `demo`.
    const figures = await intruder.act<{ servers: Array<{ server: string; lastDay: { calls: number } }> }>(
      'GetCallFigures',
    );
    expect(figures.servers).toEqual([
      expect.objectContaining({ server: 'demo', lastDay: expect.objectContaining({ calls: 1 }) }),
    ]);
    // And the other way round.
    expect((await system.api.act<Page>('ListCalls', { agent: theirs[0]!.agent.id })).calls).toEqual([]);
  });

  it('answers an AGENT signer with forbidden (the log is for the owner and writers)', async () => {
    const agentKey = new ApiClient(system.api.apiUrl, undefined, system.api.principal);
    await system.api.act('AuthorizeSigner', {
      principal: agentKey.key.principal,
      role: 'AGENT',
      agents: [system.agentId('victim-agent')],
    });
    const err = await refusal(agentKey.act('ListCalls'));
    expect(err.code).toBe('forbidden');
    expect((await refusal(agentKey.act('GetCallFigures'))).code).toBe('forbidden');
  });
});
