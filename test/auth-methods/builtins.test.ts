import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { findBuiltin } from '@mcpx/domain';
import { addTool, echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const TOKEN = 'gho_vendorToken123';

async function toolNames(api: ApiClient, agent: string): Promise<string[]> {
  return ((await api.act('ListAgentTools', { agent })).tools as Array<{ name: string }>).map((t) => t.name).sort();
}

async function refused(p: Promise<unknown>): Promise<{ code: string; details: { field?: string } }> {
  return p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: { code: string; details: { field?: string } }) => e,
  );
}

describe('built-in servers: a vendor connection lights them up, no mcp_servers row', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    // The test endpoint of the `github` built-in: it answers only with the vendor's token.
    // `echo` says it only reads; a built-in's unhinted `add` falls to the name heuristic.
    upstream = await startTestMcpServer({
      era: 'modern',
      requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` },
      tools: [{ ...echoTool(), annotations: { readOnlyHint: true } }, addTool()],
    });
    // No background probe within the test (a just-lit built-in is probed after the backoff's
    // first step): what serves before any discovery is the fallback list.
    h = await RegistryHarness.start({
      proxy: true,
      registry: { reprobe: { baseMs: 600_000 } },
      env: { BUILTIN_ENDPOINTS: `github=${upstream.url}` },
    });
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  it('lights up, serves its fallback list before any discovery, is granted, called with the vendor token, refreshed, and goes dark', async () => {
    const api = h.api();
    expect((await api.act('ListMcpServers')).servers).toEqual([]);
    await expect(
      api.act('CreateAgent', { name: 'early', definition: { mcpServers: ['github'] } }),
    ).rejects.toMatchObject({ code: 'invalid_input' });

    const lit = await api.act<{ vendor: string; servers: RedactedMcpServer[] }>('SetVendorConnection', {
      vendor: 'github',
      accessToken: TOKEN,
      refreshToken: 'ghr_refresh456',
      expiresAt: '2030-01-01T00:00:00Z',
    });
    expect(JSON.stringify(lit)).not.toContain(TOKEN);
    expect(JSON.stringify(lit)).not.toContain('ghr_refresh456');
    expect(lit.servers).toHaveLength(1);
    const fallback = findBuiltin('github')!.fallbackTools.map((t) => t.name);
    expect(lit.servers[0]).toMatchObject({
      name: 'github',
      builtin: true,
      url: upstream.url,
      auth: 'oauth',
      status: { state: 'unknown' },
    });
    expect(lit.servers[0]!.id).toMatch(/^builtin:github:/);
    expect(lit.servers[0]!.tools.map((t) => t.name)).toEqual(fallback);
    // Permissions of a built-in: annotations first, else the name heuristic.
    const levels = Object.fromEntries(lit.servers[0]!.tools.map((t) => [t.name, t.permission]));
    expect(levels).toEqual({ get_issue: 'act', search_repositories: 'act', create_issue: 'always_ask' });
    // No row of its own; the tokens sealed.
    expect(
      await h.sql.selectFrom('registry.mcp_servers').select('name').where('account_id', '=', api.principal).execute(),
    ).toEqual([]);
    const conn = await h.sql
      .selectFrom('registry.vendor_connections')
      .selectAll()
      .where('account_id', '=', api.principal)
      .executeTakeFirstOrThrow();
    expect(Buffer.from(conn.tokens_sealed).toString('latin1')).not.toContain(TOKEN);
    expect((await api.act('ListMcpServers')).servers.map((s: RedactedMcpServer) => [s.name, s.builtin])).toEqual([
      ['github', true],
    ]);

    // Granted like any server; its fallback tools are projected before anything was discovered.
    await api.act('CreateAgent', { name: 'dev', definition: { mcpServers: ['github'] } });
    const listedBefore = upstream.stats.listCalls;
    await eventually(async () => ((await toolNames(api, 'dev')).length === 3 ? true : undefined));
    expect(await toolNames(api, 'dev')).toEqual(fallback.map((n) => `github__${n}`).sort());
    const agentTools = (await api.act('ListAgentTools', { agent: 'dev' })).tools as Array<{
      name: string;
      permission: string;
    }>;
    expect(agentTools.find((t) => t.name === 'github__create_issue')?.permission).toBe('always_ask');
    expect(upstream.stats.listCalls).toBe(listedBefore);

    // RefreshMcpServer discovers from the (overridden) endpoint with the vendor's token.
    const refreshed = (await api.act<{ server: RedactedMcpServer }>('RefreshMcpServer', { name: 'github' })).server;
    expect(refreshed).toMatchObject({ name: 'github', builtin: true, status: { state: 'ok' } });
    expect(refreshed.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(refreshed.tools.find((t) => t.name === 'echo')?.permission).toBe('act');
    await eventually(async () => ((await toolNames(api, 'dev')).includes('github__echo') ? true : undefined));
    expect(await toolNames(api, 'dev')).toEqual(['github__add', 'github__echo']);
    expect((await api.act('ListMcpServers')).servers[0].tools.map((t: { name: string }) => t.name).sort()).toEqual([
      'add',
      'echo',
    ]);

    // A call goes through the proxy to the endpoint, carrying the vendor's token.
    const callsBefore = upstream.stats.calls;
    const { result } = await api.act('InvokeTool', { agent: 'dev', tool: 'github__echo', arguments: { text: 'hi' } });
    expect(result.text).toBe('echo: hi');
    expect(upstream.stats.calls).toBe(callsBefore + 1);
    expect(new Set(upstream.stats.headersSeen.get('authorization'))).toEqual(new Set([`Bearer ${TOKEN}`]));

    // Disconnecting the vendor: the built-in goes dark, leaves the grant, its documents go.
    expect(await api.act('DeleteVendorConnection', { vendor: 'github' })).toEqual({
      vendor: 'github',
      servers: ['github'],
    });
    expect((await api.act('ListMcpServers')).servers).toEqual([]);
    expect((await api.act('GetAgent', { agent: 'dev' })).agent.definition.mcpServers).toEqual([]);
    await eventually(async () => ((await toolNames(api, 'dev')).length === 0 ? true : undefined));
    await expect(api.act('RefreshMcpServer', { name: 'github' })).rejects.toMatchObject({ code: 'not_found' });

    // Connecting again is a new incarnation: the fallback list serves again.
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: TOKEN });
    await api.act('UpdateAgent', { agent: 'dev', definition: { mcpServers: ['github'] } });
    await eventually(async () => ((await toolNames(api, 'dev')).length === 3 ? true : undefined));
  });

  it('another account sees nothing of it', async () => {
    const a = h.api();
    const b = h.api();
    await a.act('SetVendorConnection', { vendor: 'github', accessToken: TOKEN });
    expect((await b.act('ListMcpServers')).servers).toEqual([]);
    await expect(b.act('CreateAgent', { name: 'x', definition: { mcpServers: ['github'] } })).rejects.toMatchObject({
      code: 'invalid_input',
    });
    await expect(b.act('RefreshMcpServer', { name: 'github' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('refuses bad vendor connections by field, writing nothing', async () => {
    const api = h.api();
    const before = await h.settledDigest();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ vendor: 'nope', accessToken: 't' }, 'vendor'],
      [{ vendor: 'github' }, 'accessToken'],
      [{ vendor: 'github', accessToken: 'with space' }, 'accessToken'],
      [{ vendor: 'github', accessToken: 't', refreshToken: 5 }, 'refreshToken'],
      [{ vendor: 'github', accessToken: 't', expiresAt: 'soon' }, 'expiresAt'],
      [{ vendor: 'github', accessToken: 't', extra: 1 }, 'extra'],
    ];
    for (const [fields, field] of cases) {
      const err = await refused(api.act('SetVendorConnection', fields));
      expect(err, JSON.stringify(fields)).toMatchObject({ code: 'invalid_input', details: { field } });
      expect(JSON.stringify(err)).not.toContain('with space');
    }
    expect(await refused(api.act('DeleteVendorConnection', { vendor: 'github' }))).toMatchObject({
      code: 'not_found',
      details: { field: 'vendor' },
    });
    expect(await h.tableDigest()).toEqual(before);
  });
});
