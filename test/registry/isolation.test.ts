import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

/** Two accounts on one registry: nothing one does reads, changes, refreshes, deletes or grants the other's. */
describe('account isolation', () => {
  let h: RegistryHarness;
  let upA: TestMcpServer;
  let upB: TestMcpServer;

  beforeAll(async () => {
    [h, upA, upB] = await Promise.all([
      RegistryHarness.start(),
      startTestMcpServer({ requireHeader: { name: 'Authorization', value: 'Bearer a-secret-1' } }),
      startTestMcpServer({ era: 'modern' }),
    ]);
  });
  afterAll(async () => {
    await h?.stop();
    await Promise.all([upA?.close(), upB?.close()]);
  });

  it("keeps every server, agent and secret of one account out of the other's reach", async () => {
    const a = h.api();
    const b = h.api();
    await a.act('SetMcpServer', {
      name: 'gh',
      config: { url: upA.url, secretHeaders: { Authorization: 'Bearer a-secret-1' } },
    });
    await a.act('SetMcpServer', {
      name: 'only-a',
      config: { url: upA.url, secretHeaders: { Authorization: 'Bearer a-secret-1' } },
    });
    const alpha = (await a.act('CreateAgent', { name: 'alpha', definition: { mcpServers: ['gh', 'only-a'] } })).agent;
    await eventually(
      async () => ((await a.act('ListAgentTools', { agent: alpha.id })).tools.length === 4 ? true : undefined),
      15_000,
      'projection of A',
    );
    await b.act('SetMcpServer', { name: 'gh', config: { url: upB.url } });
    const beta = (await b.act('CreateAgent', { name: 'beta', definition: { mcpServers: ['gh'] } })).agent;

    const snapshotA = async (): Promise<unknown> => ({
      servers: (await a.act('ListMcpServers')).servers.map((s: Record<string, unknown>) => ({
        ...s,
        status: { ...(s.status as object), checkedAt: 0 },
        updatedAt: 0,
      })),
      agents: (await a.act('ListAgents')).agents,
      secrets: await h.sql
        .selectFrom('registry.secrets')
        .selectAll()
        .where('account_id', '=', a.principal)
        .orderBy('name')
        .execute(),
    });
    const before = await snapshotA();
    const handshakesA = upA.stats.handshakes;

    // Read: B sees its own only.
    expect((await b.act('ListMcpServers')).servers.map((s: { url: string }) => s.url)).toEqual([upB.url]);
    expect((await b.act('ListAgents')).agents.map((x: { id: string }) => x.id)).toEqual([beta.id]);
    for (const agent of [alpha.id, 'alpha']) {
      await expect(b.act('GetAgent', { agent })).rejects.toMatchObject({ code: 'not_found' });
      await expect(b.act('ListAgentTools', { agent })).rejects.toMatchObject({ code: 'not_found' });
      // Change, and call through, the other's agent.
      await expect(b.act('UpdateAgent', { agent, definition: { mcpServers: ['gh'] } })).rejects.toMatchObject({
        code: 'not_found',
      });
      await expect(b.act('InvokeTool', { agent, tool: 'gh__echo', arguments: { text: 'x' } })).rejects.toMatchObject({
        code: 'not_found',
      });
    }
    // Refresh or delete the other's server by name: not found in B's namespace.
    await expect(b.act('RefreshMcpServer', { name: 'only-a' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(b.act('DeleteMcpServer', { name: 'only-a' })).rejects.toMatchObject({ code: 'not_found' });
    // Grant the other's server.
    await expect(b.act('CreateAgent', { name: 'thief', definition: { mcpServers: ['only-a'] } })).rejects.toMatchObject(
      { code: 'invalid_input' },
    );
    await expect(
      b.act('UpdateAgent', { agent: beta.id, definition: { mcpServers: ['gh', 'only-a'] } }),
    ).rejects.toMatchObject({ code: 'invalid_input' });
    // Use the other's secret.
    await expect(
      b.act('SetMcpServer', {
        name: 'steal',
        config: { url: upA.url, secretRefs: { Authorization: 'mcp-gh-authorization' } },
      }),
    ).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'config.secretRefs.Authorization' },
    });
    // Sign for the other account.
    const bForA = new ApiClient(h.apiUrl, b.key, a.principal);
    await expect(bForA.act('ListMcpServers')).rejects.toMatchObject({ code: 'forbidden' });
    await expect(bForA.act('AuthorizeSigner', { principal: b.principal, role: 'OWNER' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    // Same name, own namespace: B's delete of `gh` deletes B's `gh` only.
    expect(await b.act('DeleteMcpServer', { name: 'gh' })).toEqual({ name: 'gh' });
    expect((await b.act('GetAgent', { agent: beta.id })).agent.grants.mcpServers).toEqual([]);
    // And B's `only-a` is B's own record.
    const mine = (await b.act('SetMcpServer', { name: 'only-a', config: { url: upB.url } })).server;
    expect(mine.url).toBe(upB.url);

    expect(await snapshotA()).toEqual(before);
    expect(upA.stats.handshakes).toBe(handshakesA);
    expect((await a.act('RefreshMcpServer', { name: 'gh' })).server.status.state).toBe('ok');
    expect(
      (await a.act('ListAgentTools', { agent: alpha.id })).tools.map((t: { name: string }) => t.name).sort(),
    ).toEqual(['gh__add', 'gh__echo', 'only-a__add', 'only-a__echo']);
  });
});
