import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePayload, type ToolsObserved } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';
import { startListeningServer, type ListeningServer } from './listening-server.js';

/** Freshness from the server's own hints: ttlMs/cacheScope recorded, lists in use re-listed on expiry, change streams. */
describe('freshness of modern servers', () => {
  let h: RegistryHarness;
  let hinted: TestMcpServer;
  let listening: ListeningServer;

  beforeAll(async () => {
    [h, hinted, listening] = await Promise.all([
      RegistryHarness.start(),
      startTestMcpServer({ era: 'modern', tools: [echoTool()], listHints: { ttlMs: 45_000, cacheScope: 'private' } }),
      startListeningServer(['one']),
    ]);
  });
  afterAll(async () => {
    await h?.stop();
    await Promise.all([hinted?.close(), listening?.close()]);
  });

  const nextProbeAt = async (account: string, name: string): Promise<Date | null> =>
    (
      await h.sql
        .selectFrom('registry.mcp_servers')
        .select('next_probe_at')
        .where('account_id', '=', account)
        .where('name', '=', name)
        .executeTakeFirstOrThrow()
    ).next_probe_at;

  it('records the hints, arms a re-list when a proxy uses the list (never before it expires), and re-lists when due', async () => {
    const api = h.api();
    const { server } = await api.act('SetMcpServer', { name: 'hinted', config: { url: hinted.url } });
    expect(server.status).toMatchObject({ state: 'ok', listTtlMs: 45_000, listCacheScope: 'private' });
    expect(await nextProbeAt(api.principal, 'hinted')).toBeNull();

    // A proxy opened a connection: the list is in use.
    const observed: ToolsObserved = {
      account: api.principal,
      server: 'hinted',
      tools: [{ name: 'echo', inputSchema: { type: 'object' } }],
      transport: 'http',
    };
    const before = Date.now();
    h.nc.publish(h.subjects.toolsObserved, encodePayload(observed));
    const armed = await eventually(
      async () => (await nextProbeAt(api.principal, 'hinted')) ?? undefined,
      10_000,
      'the re-list armed',
    );
    expect(armed.getTime()).toBeGreaterThanOrEqual(before + 45_000);
    expect(armed.getTime()).toBeLessThanOrEqual(Date.now() + 45_000 * 1.1 + 1_000);
    // Another use does not postpone it.
    h.nc.publish(h.subjects.toolsObserved, encodePayload(observed));
    await h.nc.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect((await nextProbeAt(api.principal, 'hinted'))?.getTime()).toBe(armed.getTime());

    // Time passes (the row says it is due): the re-prober lists it again and disarms it.
    const lists = hinted.stats.listCalls;
    await h.sql.transaction().execute(async (trx) => {
      // This connection has no http allow-list of its own: the row's URL check needs it.
      await sql`SELECT set_config('mcpx.allow_http_hosts', '127.0.0.1', true)`.execute(trx);
      await trx
        .updateTable('registry.mcp_servers')
        .set({ next_probe_at: new Date(Date.now() - 1_000) })
        .where('account_id', '=', api.principal)
        .where('name', '=', 'hinted')
        .execute();
    });
    await eventually(async () => (hinted.stats.listCalls > lists ? true : undefined), 15_000, 'the re-list');
    await eventually(
      async () => ((await nextProbeAt(api.principal, 'hinted')) === null ? true : undefined),
      10_000,
      'the re-list disarmed',
    );
    // With the stored verdict: no probe for it.
    expect(hinted.stats.discovers).toBe(1);
  });

  it('a change stream whose instance stopped comes back on another instance when a proxy uses the server', async () => {
    const server = await startListeningServer(['a']);
    const holder = await h.addRegistry();
    try {
      const api = new ApiClient(holder.url, h.api().key);
      await api.act('SetMcpServer', { name: 'moving', config: { url: server.url } });
      await eventually(
        async () => (server.stats.listens === 1 ? true : undefined),
        10_000,
        'the stream on the first instance',
      );
      await holder.stop();
      // A proxy opened a connection: whichever instance records it takes the stream over.
      const observed: ToolsObserved = {
        account: api.principal,
        server: 'moving',
        tools: [{ name: 'a', inputSchema: { type: 'object' } }],
        transport: 'http',
      };
      h.nc.publish(h.subjects.toolsObserved, encodePayload(observed));
      await eventually(
        async () => (server.stats.listens === 2 ? true : undefined),
        10_000,
        'the stream on another instance',
      );
      server.changeTools(['a', 'b']);
      const other = new ApiClient(h.apiUrl, api.key);
      await eventually(
        async () =>
          (await other.act('ListMcpServers')).servers.find((x: { name: string }) => x.name === 'moving')?.tools
            .length === 2
            ? true
            : undefined,
        10_000,
        'the change seen through the new stream',
      );
    } finally {
      await holder.stop();
      await server.close();
    }
  });

  it('holds one change stream per server across two registry instances; a list_changed re-discovers at once', async () => {
    const second = await h.addRegistry();
    try {
      const api = h.api();
      const { server } = await api.act('SetMcpServer', { name: 'live', config: { url: listening.url } });
      expect(server.tools.map((t: { name: string }) => t.name)).toEqual(['one']);
      await eventually(
        async () => (listening.stats.listens >= 1 ? true : undefined),
        10_000,
        'the change stream to open',
      );
      // A refresh through the other instance does not open a second stream.
      await api.act('RefreshMcpServer', { name: 'live' });
      await new Promise((r) => setTimeout(r, 500));
      expect(listening.stats.listens).toBe(1);

      listening.changeTools(['one', 'two']);
      const seen = await eventually(
        async () => {
          const s = (await api.act('ListMcpServers')).servers.find((x: { name: string }) => x.name === 'live');
          return s.tools.length === 2 ? s : undefined;
        },
        10_000,
        'the new tool without a refresh',
      );
      expect(seen.tools.map((t: { name: string }) => t.name)).toEqual(['one', 'two']);
      // The stream connects with the stored verdict: one probe ever.
      expect(listening.stats.discovers).toBe(1);
    } finally {
      await second.stop();
    }
  });
});
