import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@mcpx/envelope';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { storedSecretNames } from '../support/fixtures/stored-secrets.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

/** RedactedMcpServer (docs/servers.md#secrets-and-redaction), exactly. */
// Later fields: `auth` (the server's auth method); `builtin` appears on built-ins only; MCP
// 2026-07-28 adds the era and protocol version the server was last reached on.
const REDACTED_KEYS = [
  'auth',
  'createdAt',
  'era',
  'hasSecrets',
  'headerNames',
  'id',
  'name',
  'protocolVersion',
  'secretHeaderNames',
  'status',
  'tools',
  'transport',
  'updatedAt',
  'url',
];

describe('registry actions', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let modern: TestMcpServer;

  beforeAll(async () => {
    [h, upstream, modern] = await Promise.all([
      RegistryHarness.start(),
      startTestMcpServer(),
      startTestMcpServer({ era: 'modern' }),
    ]);
  });
  afterAll(async () => {
    await h?.stop();
    await Promise.all([upstream?.close(), modern?.close()]);
  });

  const toolNames = async (api: ApiClient, agent: string): Promise<string[]> =>
    ((await api.act('ListAgentTools', { agent })).tools as Array<{ name: string }>).map((t) => t.name).sort();

  it.each(['modern', 'legacy'] as const)(
    'answers SetMcpServer, RefreshMcpServer and ListMcpServers with exactly the redacted record (a %s server)',
    async (era) => {
      const api = h.api();
      const up = era === 'modern' ? modern : upstream;
      const { server } = await api.act('SetMcpServer', {
        name: 'demo',
        config: {
          url: up.url,
          headers: { 'X-Static': 'visible' },
          secretHeaders: { Authorization: 'Bearer hidden-1234' },
        },
      });
      expect(Object.keys(server).sort()).toEqual(REDACTED_KEYS);
      expect(server).toMatchObject({
        name: 'demo',
        url: up.url,
        transport: null,
        headerNames: ['X-Static'],
        secretHeaderNames: ['Authorization'],
        hasSecrets: true,
        status: { state: 'ok', transport: 'http' },
        era,
      });
      expect(server.protocolVersion).toBe(era === 'modern' ? '2026-07-28' : '2025-11-25');
      // The secret header went to the server, whichever era it speaks.
      expect(up.stats.headersSeen.get('authorization')).toContain('Bearer hidden-1234');
      expect(server.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(new Date(server.createdAt).toISOString()).toBe(server.createdAt);
      for (const tool of server.tools) {
        // Each tool carries its effective permission (and whether the owner overrode it).
        expect(
          Object.keys(tool).every((k) =>
            [
              'name',
              'toolName',
              'description',
              'inputSchema',
              'permission',
              'permissionOverridden',
              'inheritedPermission',
            ].includes(k),
          ),
        ).toBe(true);
        expect(tool.permission).toBe('act');
        expect(tool.inheritedPermission).toBe('act');
        expect(tool.toolName).toBe(`demo__${tool.name}`);
      }
      expect(server.tools.map((t: { toolName: string }) => t.toolName).sort()).toEqual(['demo__add', 'demo__echo']);
      const refreshed = (await api.act('RefreshMcpServer', { name: 'demo' })).server;
      expect(Object.keys(refreshed).sort()).toEqual(REDACTED_KEYS);
      const { servers } = await api.act('ListMcpServers');
      expect(servers).toHaveLength(1);
      expect(Object.keys(servers[0]).sort()).toEqual(REDACTED_KEYS);
      expect(JSON.stringify(servers)).not.toContain('hidden-1234');
    },
  );

  it('AuthorizeSigner: an OWNER adds signers; each role may do what it may, and only an OWNER authorizes', async () => {
    const owner = h.api();
    await owner.act('SetMcpServer', { name: 'demo', config: { url: upstream.url } });
    const writerKey = generateKeyPair();
    const agentKey = generateKeyPair();
    const writer = new ApiClient(h.apiUrl, writerKey, owner.principal);
    const agentSigner = new ApiClient(h.apiUrl, agentKey, owner.principal);

    // Not yet a signer of the account.
    await expect(writer.act('ListMcpServers')).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'signer' },
    });

    expect(await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' })).toEqual({
      signer: { principal: writerKey.principal, role: 'WRITER' },
    });
    // A WRITER changes servers and agents, but cannot authorize signers.
    await writer.act('SetMcpServer', { name: 'second', config: { url: upstream.url } });
    await writer.act('CreateAgent', { name: 'w-agent', definition: { mcpServers: ['second'] } });
    await owner.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['w-agent'] });
    await expect(
      writer.act('AuthorizeSigner', { principal: generateKeyPair().principal, role: 'OWNER' }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    // An AGENT reads, and sees only the servers of the agents it is bound to (w-agent: second).
    expect((await agentSigner.act('ListMcpServers')).servers.map((s: { name: string }) => s.name)).toEqual(['second']);
    await agentSigner.act('GetAgent', { agent: 'w-agent' });
    await expect(agentSigner.act('SetMcpServer', { name: 'x', config: { url: upstream.url } })).rejects.toMatchObject({
      code: 'forbidden',
    });
    await expect(agentSigner.act('DeleteMcpServer', { name: 'demo' })).rejects.toMatchObject({ code: 'forbidden' });

    // Bad inputs name their field.
    await expect(owner.act('AuthorizeSigner', { principal: 'nope', role: 'WRITER' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'principal' },
    });
    await expect(owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'ADMIN' })).rejects.toMatchObject(
      { code: 'invalid_input', details: { field: 'role' } },
    );

    // Promoting the WRITER to OWNER lets it authorize; demoting takes that away again.
    await owner.act('AuthorizeSigner', { principal: writerKey.principal, role: 'OWNER' });
    await expect(
      writer.act('AuthorizeSigner', { principal: agentKey.principal, role: 'WRITER', agents: ['w-agent'] }),
    ).rejects.toMatchObject({ code: 'invalid_input', details: { field: 'agents' } });
    await writer.act('AuthorizeSigner', { principal: agentKey.principal, role: 'WRITER' });
    await agentSigner.act('SetMcpServer', { name: 'third', config: { url: upstream.url } });
  });

  it('GetAgent reports grants as read ~/self does', async () => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'demo', config: { url: upstream.url } });
    await api.act('SetMcpServer', { name: 'other', config: { url: upstream.url } });
    const created = (
      await api.act('CreateAgent', { name: 'helper', definition: { mcpServers: ['demo', 'other', 'demo'] } })
    ).agent;
    expect(created.grants).toEqual({ mcpServers: ['demo', 'other'] });
    const byName = (await api.act('GetAgent', { agent: 'helper' })).agent;
    const byId = (await api.act('GetAgent', { agent: created.id })).agent;
    expect(byName).toEqual(byId);
    expect(byName).toMatchObject({
      id: created.id,
      name: 'helper',
      grants: { mcpServers: ['demo', 'other'] },
      definition: { mcpServers: ['demo', 'other'] },
    });
    const updated = (await api.act('UpdateAgent', { agent: created.id, definition: { mcpServers: ['other'] } })).agent;
    expect(updated.grants.mcpServers).toEqual(['other']);
    expect((await api.act('GetAgent', { agent: 'helper' })).agent.grants.mcpServers).toEqual(['other']);
  });

  it('DeleteMcpServer deletes its own secrets only, scrubs every grant, and the projector drops the documents', async () => {
    const api = h.api();
    // `gh` and `gh-x`: a prefix of each other's secret names (mcp-gh-… and mcp-gh-x-…).
    await api.act('SetMcpServer', {
      name: 'gh',
      config: { url: upstream.url, secretHeaders: { Authorization: 'Bearer a-1234', 'X-Key': 'k-1234' } },
    });
    await api.act('SetMcpServer', {
      name: 'gh-x',
      config: { url: upstream.url, secretHeaders: { Authorization: 'Bearer b-1234' } },
    });
    await api.act('SetMcpServer', {
      name: 'g_h',
      config: { url: upstream.url, secretHeaders: { Authorization: 'Bearer c-1234' } },
    });
    const a1 = (await api.act('CreateAgent', { name: 'one', definition: { mcpServers: ['gh', 'gh-x'] } })).agent;
    const a2 = (await api.act('CreateAgent', { name: 'two', definition: { mcpServers: ['gh'] } })).agent;
    const a3 = (await api.act('CreateAgent', { name: 'three', definition: { mcpServers: ['gh-x'] } })).agent;
    await eventually(
      async () => ((await toolNames(api, a1.id)).length === 4 ? true : undefined),
      15_000,
      'agent one projected',
    );
    await eventually(
      async () => ((await toolNames(api, a2.id)).length === 2 ? true : undefined),
      15_000,
      'agent two projected',
    );
    const secretNames = (): Promise<string[]> => storedSecretNames(h.sql, api.principal);
    expect(await secretNames()).toEqual([
      'mcp-g_h-authorization',
      'mcp-gh-authorization',
      'mcp-gh-x-authorization',
      'mcp-gh-x-key',
    ]);

    expect(await api.act('DeleteMcpServer', { name: 'gh' })).toEqual({ name: 'gh' });

    expect(await secretNames()).toEqual(['mcp-g_h-authorization', 'mcp-gh-x-authorization']);
    expect((await api.act('GetAgent', { agent: a1.id })).agent.grants.mcpServers).toEqual(['gh-x']);
    expect((await api.act('GetAgent', { agent: a2.id })).agent.grants.mcpServers).toEqual([]);
    expect((await api.act('GetAgent', { agent: a3.id })).agent.grants.mcpServers).toEqual(['gh-x']);
    expect((await api.act('ListMcpServers')).servers.map((s: { name: string }) => s.name)).toEqual(['g_h', 'gh-x']);
    await eventually(
      async () => ((await toolNames(api, a1.id)).join() === 'gh-x__add,gh-x__echo' ? true : undefined),
      15_000,
      'agent one loses gh',
    );
    await eventually(
      async () => ((await toolNames(api, a2.id)).length === 0 ? true : undefined),
      15_000,
      'agent two loses gh',
    );
    expect(await toolNames(api, a3.id)).toEqual(['gh-x__add', 'gh-x__echo']);
    // The remaining servers still reach upstream with their own secret.
    expect((await api.act('RefreshMcpServer', { name: 'gh-x' })).server.status.state).toBe('ok');
    await expect(api.act('DeleteMcpServer', { name: 'gh' })).rejects.toMatchObject({
      code: 'not_found',
      details: { field: 'name' },
    });
  });

  it('refuses a secret header whose generated name another server already owns', async () => {
    const api = h.api();
    await api.act('SetMcpServer', {
      name: 'gh',
      config: { url: upstream.url, secretHeaders: { 'X-Token': 'one-1234' } },
    });
    await expect(
      api.act('SetMcpServer', { name: 'gh-x', config: { url: upstream.url, secretHeaders: { Token: 'two-1234' } } }),
    ).rejects.toMatchObject({
      code: 'conflict',
      details: { field: 'config.secretHeaders.Token' },
    });
    expect((await api.act('ListMcpServers')).servers.map((s: { name: string }) => s.name)).toEqual(['gh']);
  });

  it('a secret header dropped from the config is deleted with it; one not given again is kept', async () => {
    const api = h.api();
    await api.act('SetMcpServer', {
      name: 's',
      config: { url: upstream.url, secretHeaders: { 'X-A': 'a-1234', 'X-B': 'b-1234' } },
    });
    // Given again: X-A re-sealed; X-B not mentioned: kept.
    let server = (
      await api.act('SetMcpServer', { name: 's', config: { url: upstream.url, secretHeaders: { 'X-A': 'a-5678' } } })
    ).server;
    expect(server.secretHeaderNames.sort()).toEqual(['X-A', 'X-B']);
    // X-B becomes a static header: its secret goes.
    server = (await api.act('SetMcpServer', { name: 's', config: { url: upstream.url, headers: { 'X-B': 'plain' } } }))
      .server;
    expect(server.secretHeaderNames).toEqual(['X-A']);
    expect(server.headerNames).toEqual(['X-B']);
    expect(await storedSecretNames(h.sql, api.principal)).toEqual(['mcp-s-x-a']);
  });
});
