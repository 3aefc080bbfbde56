import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { generateKeyPair } from '@mcpx/envelope';
import { ApiClient } from '../support/api-client.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { actionError } from '../approvals/approval-tools.js';
// Tools named like the fallback list, no hints; their schemas accept the fallback's arguments, so
// calls work before and after a discovery (the background probe may discover at any time).
import { vendorTools } from '../console/vendor-tools.js';

const TOKEN = 'gho_permissionsToken';

type ToolRow = { name: string; permission: string; cid: string; description: string };

/**
 * SetToolPermission on a built-in (no mcp_servers row): the override is keyed by the built-in's
 * server id, moves its generation on, reaches the projector on the discovery event, and the proxy
 * enforces it. It lasts as long as the vendor connection: connecting again starts from the
 * inherited levels (the name heuristic).
 */
describe('per-tool permission overrides on built-in servers', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    upstream = await startTestMcpServer({
      requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` },
      tools: vendorTools(),
    });
    system = await ProxySystem.start({ env: { BUILTIN_ENDPOINTS: `github=${upstream.url}` } });
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  const tool = async (name: string): Promise<ToolRow> => {
    const { tools } = await system.api.act<{ tools: ToolRow[] }>('ListAgentTools', { agent: system.agentId('dev') });
    const t = tools.find((x) => x.name === name);
    if (t === undefined) throw new Error(`no ${name}`);
    return t;
  };
  const until = (name: string, permission: string, what: string): Promise<ToolRow> =>
    eventually(
      async () => {
        const t = await tool(name);
        return t.permission === permission ? t : undefined;
      },
      15_000,
      what,
    );
  const listed = async (): Promise<RedactedMcpServer> =>
    (await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers.find(
      (s) => s.name === 'github',
    )!;

  it('asks before a read-like tool and lets a write-like one act; survives a discovery; goes with the connection', async () => {
    const api = system.api;
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: TOKEN });
    await system.createAgent('dev', ['github'], 3);
    // Never discovered: the fallback list serves, with the name heuristic's levels.
    const inherited = await tool('github__get_issue');
    expect(inherited.permission).toBe('act');
    expect((await tool('github__create_issue')).permission).toBe('always_ask');

    const set = await api.act('SetToolPermission', { server: 'github', tool: 'get_issue', permission: 'always_ask' });
    expect(set).toEqual({
      server: 'github',
      tool: 'get_issue',
      permission: 'always_ask',
      inherited: 'act',
      overridden: true,
    });
    const asked = await until('github__get_issue', 'always_ask', 'the override projected');
    expect(asked.cid).not.toBe(inherited.cid);
    expect((await listed()).tools.find((t) => t.name === 'get_issue')).toMatchObject({
      permission: 'always_ask',
      permissionOverridden: true,
      inheritedPermission: 'act',
    });
    // The proxy follows the new document: a real call stops for a human and never reaches the server.
    const before = upstream.stats.calls;
    await eventually(
      async () =>
        (
          await system
            .callError('dev', 'r1', 'github__get_issue', { owner: 'o', repo: 'r', issue_number: 1 })
            .catch(() => undefined)
        )?.code === 'approval_required'
          ? true
          : undefined,
      15_000,
      'the proxy to ask',
    );
    expect(upstream.stats.calls).toBe(before);

    // `act` on a write-like tool: the call goes through without a human.
    expect(
      await api.act('SetToolPermission', { server: 'github', tool: 'create_issue', permission: 'act' }),
    ).toMatchObject({ permission: 'act', inherited: 'always_ask', overridden: true });
    await until('github__create_issue', 'act', 'the waiver projected');
    expect(
      (await system.call('dev', 'r2', 'github__create_issue', { owner: 'o', repo: 'r', title: 'x' })).result.text,
    ).toBe('created x');

    // A discovery replaces the fallback list; the overrides stay and ride on its event.
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server).toMatchObject({ status: { state: 'ok' } });
    await eventually(
      async () => ((await tool('github__get_issue')).description === 'Get an issue.' ? true : undefined),
      15_000,
      'the discovered list projected',
    );
    expect((await tool('github__get_issue')).permission).toBe('always_ask');
    expect((await tool('github__create_issue')).permission).toBe('act');
    const after = (await listed()).tools.map((t) => [t.name, t.permission, t.permissionOverridden ?? false]);
    expect(after).toEqual([
      ['get_issue', 'always_ask', true],
      ['create_issue', 'act', true],
    ]);

    // Back to inherited.
    expect(await api.act('SetToolPermission', { server: 'github', tool: 'get_issue', permission: null })).toMatchObject(
      { permission: 'act', overridden: false },
    );
    await until('github__get_issue', 'act', 'back to inherited');
    await eventually(
      async () =>
        (
          await system
            .call('dev', 'r3', 'github__get_issue', { owner: 'o', repo: 'r', issue_number: 7 })
            .catch(() => undefined)
        )?.result.text === 'issue 7'
          ? true
          : undefined,
      15_000,
      'the proxy to act again',
    );

    // Disconnect and connect again: a new incarnation, starting from the inherited levels.
    await api.act('DeleteVendorConnection', { vendor: 'github' });
    const db = createDb(system.db.url, { max: 1 });
    try {
      expect(
        await db
          .selectFrom('registry.builtin_tool_permissions')
          .select('tool')
          .where('account_id', '=', api.principal)
          .execute(),
      ).toEqual([]);
    } finally {
      await db.destroy();
    }
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: TOKEN });
    expect((await listed()).tools.some((t) => t.permissionOverridden)).toBe(false);
    await api.act('UpdateAgent', { agent: system.agentId('dev'), definition: { mcpServers: ['github'] } });
    await until('github__create_issue', 'always_ask', 'inherited again');
  });

  it('refuses bad overrides by field, and reaches no other account', async () => {
    const api = system.api;
    expect(
      (await actionError(api.act('SetToolPermission', { server: 'github', tool: 'nope', permission: 'act' }))).details,
    ).toMatchObject({ field: 'tool' });
    expect(
      (
        await actionError(
          api.act('SetToolPermission', { server: 'github', tool: 'get_issue', permission: 'sometimes' }),
        )
      ).details,
    ).toMatchObject({ field: 'permission' });
    const other = new ApiClient(api.apiUrl);
    const err = await actionError(
      other.act('SetToolPermission', { server: 'github', tool: 'get_issue', permission: 'act' }),
    );
    expect(err.code).toBe('not_found');
    expect(err.details).toMatchObject({ field: 'server' });
  });

  it('a WRITER cannot shed an always_ask override of a built-in by disconnecting the vendor; the OWNER can', async () => {
    const api = system.api;
    await api.act('SetToolPermission', { server: 'github', tool: 'get_issue', permission: 'always_ask' });
    const key = generateKeyPair();
    await api.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    const writer = new ApiClient(api.apiUrl, key, api.principal);
    const refused = await actionError(writer.act('DeleteVendorConnection', { vendor: 'github' }));
    expect(refused.code).toBe('forbidden');
    expect(refused.details).toMatchObject({ field: 'signer' });
    // Nothing was shed: the connection and the override are still there.
    expect((await listed()).tools.find((t) => t.name === 'get_issue')?.permissionOverridden).toBe(true);
    await api.act('DeleteVendorConnection', { vendor: 'github' });
  });
});
