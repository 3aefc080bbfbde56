import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload, type AgentToolsChangedEvent, type ServerDiscoveredEvent } from '@mcpx/contracts';
import {
  addTool,
  echoTool,
  errorTool,
  freePort,
  startEverythingServer,
  startTestMcpServer,
  type EverythingServer,
  type TestMcpServerStats,
  type TestTool,
} from '../servers/index.js';
import { startFrontServer } from '../servers/front-server.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const numbered = (n: number): TestTool[] => Array.from({ length: n }, (_, i) => ({ ...echoTool(), name: `t${i}` }));

/** Round trips spent finding out how to talk to a server: `server/discover` probes and `initialize` handshakes. */
const probes = (s: TestMcpServerStats): number => s.discovers + s.handshakes;

/** The client's identity as a request carried it: in `initialize` (legacy) or in every request's `_meta` (modern). */
function clientInfoOf(bodies: unknown[]): { name: string; version: string } | undefined {
  for (const b of bodies) {
    const body = b as {
      method?: string;
      params?: { clientInfo?: { name: string; version: string }; _meta?: Record<string, unknown> };
    };
    if (body.method === 'initialize' && body.params?.clientInfo) return body.params.clientInfo;
    const meta = body.params?._meta?.['io.modelcontextprotocol/clientInfo'] as
      { name: string; version: string } | undefined;
    if (meta !== undefined) return meta;
  }
  return undefined;
}

/** Discovery against real servers on loopback (local profile: http and loopback allowed). */
describe('discovery', () => {
  let h: RegistryHarness;
  const closers: Array<() => Promise<void>> = [];
  const track = <T extends { close(): Promise<void> }>(s: T): T => {
    closers.push(() => s.close());
    return s;
  };

  beforeAll(async () => {
    // A fast background re-probe (200 ms base) so recovery is seen within the test.
    h = await RegistryHarness.start({ registry: { reprobe: { baseMs: 200 } } });
  });
  afterAll(async () => {
    await h?.stop();
    for (const c of closers) await c().catch(() => undefined);
  });

  const toolNames = async (api: ReturnType<RegistryHarness['api']>, agent: string): Promise<string[]> =>
    ((await api.act('ListAgentTools', { agent })).tools as Array<{ name: string }>).map((t) => t.name).sort();

  describe('server-everything', () => {
    let streamable: EverythingServer;
    let sse: EverythingServer;
    beforeAll(async () => {
      [streamable, sse] = await Promise.all([startEverythingServer('streamableHttp'), startEverythingServer('sse')]);
      track(streamable);
      track(sse);
    });

    it('over Streamable HTTP, transport unset: connected over http', async () => {
      const { server } = await h.api().act('SetMcpServer', { name: 'everything', config: { url: streamable.url } });
      expect(server.status).toMatchObject({ state: 'ok', transport: 'http' });
      expect(server.transport).toBeNull();
      expect(server.tools.length).toBeGreaterThan(5);
      expect(server.tools.map((t: { toolName: string }) => t.toolName)).toContain('everything__echo');
    });

    it('over legacy SSE, transport unset: Streamable HTTP answers 4xx, SSE is used and recorded', async () => {
      const api = h.api();
      const { server } = await api.act('SetMcpServer', { name: 'legacy', config: { url: sse.url } });
      expect(server.status).toMatchObject({ state: 'ok', transport: 'sse' });
      expect(server.transport).toBeNull();
      expect(server.tools.map((t: { toolName: string }) => t.toolName)).toContain('legacy__echo');
      // Pinned to sse, it goes straight there.
      const pinned = (await api.act('SetMcpServer', { name: 'legacy', config: { url: sse.url, transport: 'sse' } }))
        .server;
      expect(pinned).toMatchObject({ transport: 'sse', status: { state: 'ok', transport: 'sse' } });
    });
  });

  it('a pinned transport is the only one tried', async () => {
    const httpOnly = track(await startTestMcpServer({ transport: 'http' }));
    const sseOnly = track(await startTestMcpServer({ transport: 'sse' }));
    const api = h.api();
    const a = (await api.act('SetMcpServer', { name: 'a', config: { url: httpOnly.url, transport: 'sse' } })).server;
    expect(a.status.state).toBe('error');
    expect(a.status.error).toContain('(SSE)');
    const b = (await api.act('SetMcpServer', { name: 'b', config: { url: sseOnly.url, transport: 'http' } })).server;
    expect(b.status.state).toBe('error');
    expect(b.status.error).toContain('(Streamable HTTP)');
    expect(b.status.error).not.toContain('SSE');
    expect(sseOnly.stats.handshakes).toBe(0);
  });

  it('reports the first (Streamable HTTP) error when both transports fail, and falls back only on a 4xx', async () => {
    const upstream = track(await startTestMcpServer({ transport: 'http' }));
    const api = h.api();
    const both = (
      await api.act('SetMcpServer', { name: 'both', config: { url: upstream.url.replace('/mcp', '/nope') } })
    ).server;
    expect(both.status.state).toBe('error');
    expect(both.status.error).toMatch(/^MCP connect to .* \(Streamable HTTP\) failed: HTTP 404/);
    // A 5xx is not a reason to try SSE: one request, then the error.
    const broken = track(await startFrontServer({ mode: 'echo', status: 503 }));
    const five = (await api.act('SetMcpServer', { name: 'five', config: { url: `${broken.origin}/mcp` } })).server;
    expect(five.status.error).toContain('HTTP 503');
    expect(broken.requests).toBe(1);
  });

  it('dials once more when the server closes the connection before answering, and only once', async () => {
    const upstream = track(await startTestMcpServer({ era: 'dual' }));
    const api = h.api();
    // A kept-alive connection the server closes as it is reused, or a restart: the first request gets no answer.
    const once = track(await startFrontServer({ mode: 'drop', target: upstream.url, drops: 1 }));
    const { server } = await api.act('SetMcpServer', { name: 'dropped-once', config: { url: `${once.origin}/mcp` } });
    expect(server.status).toMatchObject({ state: 'ok', era: 'modern' });
    expect(server.tools.map((t: { name: string }) => t.name).sort()).toEqual(['add', 'echo']);
    // A server that drops every connection: the error after two tries, not a loop.
    const always = track(await startFrontServer({ mode: 'drop', target: upstream.url, drops: 1_000 }));
    const failed = (await api.act('SetMcpServer', { name: 'dropped', config: { url: `${always.origin}/mcp` } })).server;
    expect(failed.status.state).toBe('error');
    expect(failed.status.error).toContain('other side closed');
    expect(always.requests).toBe(2);
  });

  it('saves a server that is down, with the exact connect error', async () => {
    const port = await freePort();
    const { server } = await h
      .api()
      .act('SetMcpServer', { name: 'down', config: { url: `http://127.0.0.1:${port}/mcp` } });
    expect(server.status.state).toBe('error');
    expect(server.status.error).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
    expect(server.status.lastOkAt).toBeUndefined();
    expect(server.tools).toEqual([]);
  });

  it('a server of both eras (legacy: stateless) is reached in the modern era: one server/discover, no initialize, and so on every refresh', async () => {
    const dual = track(await startTestMcpServer({ era: 'dual' }));
    const api = h.api();
    const { server } = await api.act('SetMcpServer', { name: 'both', config: { url: dual.url } });
    expect(server.status).toMatchObject({ state: 'ok', era: 'modern', protocolVersion: '2026-07-28' });
    expect(server.tools.map((t: { name: string }) => t.name).sort()).toEqual(['add', 'echo']);
    expect(dual.stats).toMatchObject({ discovers: 1, handshakes: 0 });
    // A refresh connects with the stored verdict: no probe, no handshake, the list once more.
    const lists = dual.stats.listCalls;
    expect((await api.act('RefreshMcpServer', { name: 'both' })).server.status).toMatchObject({
      state: 'ok',
      era: 'modern',
    });
    expect(dual.stats).toMatchObject({ discovers: 1, handshakes: 0, listCalls: lists + 1 });
  });

  /** The suites whose servers speak either era: each runs against a modern (2026-07-28) and a legacy (2025) server. */
  describe.each(['modern', 'legacy'] as const)('against a %s server', (era) => {
    it('follows pages up to the bound, and identifies itself', async () => {
      const paged = track(await startTestMcpServer({ era, tools: [echoTool(), addTool(), errorTool()], pageSize: 1 }));
      const front = track(await startFrontServer({ mode: 'forward', target: paged.url }));
      const api = h.api();
      const { server } = await api.act('SetMcpServer', { name: 'paged', config: { url: `${front.origin}/mcp` } });
      expect(server.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'add', 'fail']);
      expect(paged.stats.listCalls).toBe(3);
      const info = clientInfoOf(front.bodies);
      expect(info?.name).toBe('mcp-connector');
      expect(info?.version).toMatch(/^\d+\.\d+\.\d+/);

      // 60 tools one per page: discovery stops at its bound of 50 pages.
      const endless = track(await startTestMcpServer({ era, tools: numbered(60), pageSize: 1 }));
      const bounded = (await api.act('SetMcpServer', { name: 'endless', config: { url: endless.url } })).server;
      expect(bounded.status.state).toBe('ok');
      expect(endless.stats.listCalls).toBe(50);
      expect(bounded.tools).toHaveLength(50);
      // A server whose cursor loops back is listed once.
      const loop = track(await startTestMcpServer({ era, tools: numbered(3), pageSize: 1, cursorLoop: true }));
      const looped = (await api.act('SetMcpServer', { name: 'loop', config: { url: loop.url } })).server;
      expect(looped.status.state).toBe('ok');
      expect(loop.stats.listCalls).toBeLessThanOrEqual(3);
    });

    it('keeps the last good list when a server goes down, agents keep their tools, and the re-probe notices recovery', async () => {
      const first = await startTestMcpServer({ era });
      const port = first.port;
      const api = h.api();
      const good = (await api.act('SetMcpServer', { name: 'flaky', config: { url: first.url } })).server;
      expect(good.status.state).toBe('ok');
      const { agent } = await api.act('CreateAgent', { name: 'worker', definition: { mcpServers: ['flaky'] } });
      await eventually(
        async () => ((await toolNames(api, agent.id)).length === 2 ? true : undefined),
        15_000,
        'projection',
      );
      await first.close();

      const down = (await api.act('RefreshMcpServer', { name: 'flaky' })).server;
      expect(down.status.state).toBe('error');
      expect(down.status.error).toContain('ECONNREFUSED');
      expect(down.status.lastOkAt).toBe(good.status.lastOkAt);
      expect(down.tools).toEqual(good.tools);
      expect(await toolNames(api, agent.id)).toEqual(['flaky__add', 'flaky__echo']);
      // The background re-probe keeps failing (backoff grows) while it is down…
      await eventually(
        async () => {
          const s = (await api.act('ListMcpServers')).servers[0];
          return s.status.failures >= 2 ? s : undefined;
        },
        15_000,
        'a background re-probe',
      );
      expect(await toolNames(api, agent.id)).toEqual(['flaky__add', 'flaky__echo']);

      // …and sees it back, on the same port, without anyone pressing refresh.
      const again = track(await startTestMcpServer({ era, port }));
      const recovered = await eventually(
        async () => {
          const s = (await api.act('ListMcpServers')).servers[0];
          return s.status.state === 'ok' ? s : undefined;
        },
        20_000,
        'recovery',
      );
      expect(recovered.status.failures).toBeUndefined();
      expect(again.stats.listCalls).toBeGreaterThanOrEqual(1);
      expect(await toolNames(api, agent.id)).toEqual(['flaky__add', 'flaky__echo']);
    });

    it('a 401 is an error naming it; a 401 with OAuth metadata is auth_required (the server has no OAuth configured)', async () => {
      const locked = track(
        await startTestMcpServer({ era, requireHeader: { name: 'Authorization', value: 'Bearer right-token' } }),
      );
      const oauth = track(await startTestMcpServer({ era, requireBearerWithOAuthMetadata: true }));
      const api = h.api();
      const plain = (await api.act('SetMcpServer', { name: 'locked', config: { url: locked.url } })).server;
      expect(plain.status.state).toBe('error');
      expect(plain.status.error).toContain('HTTP 401');
      const wrong = (
        await api.act('SetMcpServer', {
          name: 'locked',
          config: { url: locked.url, secretHeaders: { Authorization: 'Bearer wrong-token' } },
        })
      ).server;
      expect(wrong.status.state).toBe('error');
      expect(wrong.status.error).not.toContain('wrong-token');
      const right = (
        await api.act('SetMcpServer', {
          name: 'locked',
          config: { url: locked.url, secretHeaders: { Authorization: 'Bearer right-token' } },
        })
      ).server;
      expect(right.status.state).toBe('ok');
      const needsOAuth = (await api.act('SetMcpServer', { name: 'oauth', config: { url: oauth.url } })).server;
      expect(needsOAuth.status.state).toBe('auth_required');
      expect(needsOAuth.status.error).toContain('401');
    });

    it('does not follow a redirect to another origin, and says so on the record', async () => {
      const target = track(await startTestMcpServer({ era }));
      const redirector = track(await startFrontServer({ mode: 'redirect', target: target.url }));
      const { server } = await h
        .api()
        .act('SetMcpServer', { name: 'moved', config: { url: `${redirector.origin}/mcp` } });
      expect(server.status.state).toBe('error');
      expect(server.status.error).toMatch(/redirect/i);
      expect(probes(target.stats) + target.stats.listCalls).toBe(0);
    });

    it('reaches a server behind a required header; the secret wins over a static header of the same name', async () => {
      const guarded = track(
        await startTestMcpServer({ era, requireHeader: { name: 'X-Api-Key', value: 'from-secret' } }),
      );
      const api = h.api();
      const without = (await api.act('SetMcpServer', { name: 'guarded', config: { url: guarded.url } })).server;
      expect(without.status.state).toBe('error');
      const staticOnly = (
        await api.act('SetMcpServer', {
          name: 'guarded',
          config: { url: guarded.url, headers: { 'X-Api-Key': 'from-static' } },
        })
      ).server;
      expect(staticOnly.status.state).toBe('error');
      const both = (
        await api.act('SetMcpServer', {
          name: 'guarded',
          config: {
            url: guarded.url,
            headers: { 'X-Api-Key': 'from-static' },
            secretHeaders: { 'x-api-key': 'from-secret' },
          },
        })
      ).server;
      expect(both.status.state).toBe('ok');
      expect(both.headerNames).toEqual(['X-Api-Key']);
      expect(both.secretHeaderNames).toEqual(['x-api-key']);
      // The last requests carried the secret value only.
      expect(guarded.stats.headersSeen.get('x-api-key')?.at(-1)).toBe('from-secret');
    });

    it('a set with a new config never reports the outcome of a discovery of the old one still in flight', async () => {
      const guarded = track(await startTestMcpServer({ era, requireHeader: { name: 'X-Api-Key', value: 'right' } }));
      // Each request held 300 ms in front of the server, so the refresh of the old config is surely under way.
      const slow = track(await startFrontServer({ mode: 'forward', target: guarded.url, delayMs: 300 }));
      const api = h.api();
      const url = `${slow.origin}/mcp`;
      expect((await api.act('SetMcpServer', { name: 'racing', config: { url } })).server.status.state).toBe('error');
      const start = slow.requests;
      const stale = api.act('RefreshMcpServer', { name: 'racing' });
      await eventually(async () => (slow.requests > start ? true : undefined), 30_000, 'the refresh under way');
      const fixed = (
        await api.act('SetMcpServer', { name: 'racing', config: { url, secretHeaders: { 'X-Api-Key': 'right' } } })
      ).server;
      await stale;
      expect(fixed.status.state).toBe('ok');
      expect(fixed.tools.length).toBeGreaterThan(0);
    });

    it('publishes toolsChanged only for a changed list; an unchanged one does not make the projector work', async () => {
      const upstream = track(await startTestMcpServer({ era }));
      const api = h.api();
      await api.act('SetMcpServer', { name: 'live', config: { url: upstream.url } });
      const { agent } = await api.act('CreateAgent', { name: 'watcher', definition: { mcpServers: ['live'] } });
      await eventually(
        async () => ((await toolNames(api, agent.id)).length === 2 ? true : undefined),
        15_000,
        'projection',
      );
      const v1 = (await api.act('ListAgentTools', { agent: agent.id })).version;

      const discovered = await h.capture(`mcp.events.server.discovered.${api.principal}.live`);
      const agentTools = await h.capture(`agents.tools.changed.${api.principal}.>`);
      await api.act('RefreshMcpServer', { name: 'live' });
      await eventually(
        async () => (discovered.messages.length === 1 ? true : undefined),
        5_000,
        'the discovered event',
      );
      expect(decodePayload<ServerDiscoveredEvent>(discovered.messages[0]!.data).toolsChanged).toBe(false);

      upstream.setTools([echoTool(), addTool(), errorTool()]);
      await api.act('RefreshMcpServer', { name: 'live' });
      await eventually(
        async () => (discovered.messages.length === 2 ? true : undefined),
        5_000,
        'the second discovered event',
      );
      const changed = decodePayload<ServerDiscoveredEvent>(discovered.messages[1]!.data);
      expect(changed.toolsChanged).toBe(true);
      expect(changed.tools.map((t) => t.name)).toEqual(['echo', 'add', 'fail']);
      const event = await eventually(async () => agentTools.messages[0], 15_000, 'agents.tools.changed');
      // Only the changed list made the projector publish: one event, adding the new tool.
      expect(Object.keys(decodePayload<AgentToolsChangedEvent>(event.data).added)).toEqual(['live__fail']);
      expect(agentTools.messages).toHaveLength(1);
      expect((await api.act('ListAgentTools', { agent: agent.id })).version).toBeGreaterThan(v1);
      discovered.stop();
      agentTools.stop();
    });

    it('collapses concurrent discoveries of one server: two registry instances and a quiet discovery, one tools/list sequence', async () => {
      const upstream = track(
        await startTestMcpServer({ era, tools: [echoTool(), addTool(), errorTool()], pageSize: 1 }),
      );
      // Every request to the upstream takes 150 ms, so the racers overlap for sure.
      const slow = track(await startFrontServer({ mode: 'forward', target: upstream.url, delayMs: 150 }));
      const second = await h.addRegistry();
      const api = h.api();
      await api.act('SetMcpServer', { name: 'shared', config: { url: `${slow.origin}/mcp` } });
      const base = { probes: probes(upstream.stats), lists: upstream.stats.listCalls };
      // The first discovery cost one round trip to connect: a modern server's server/discover, a legacy one's initialize.
      expect(base).toEqual({ probes: 1, lists: 3 });
      const events = await h.capture(`mcp.events.server.discovered.${api.principal}.shared`);

      const viaFirst = api.act('RefreshMcpServer', { name: 'shared' });
      const secondRefresh = new ApiClient(second.url, api.key).act('RefreshMcpServer', { name: 'shared' });
      // Under way for sure once the server has its first request (each one held 150 ms in front of
      // it), not after a fixed sleep: on a busy machine the refreshes may not have started by then.
      await eventually(
        async () => (probes(upstream.stats) + upstream.stats.listCalls > base.probes + base.lists ? true : undefined),
        30_000,
        'the refresh under way',
      );
      // A proxy reports a (stale, one-tool) list while the refresh is under way: it joins the refresh.
      h.nc.publish(
        h.subjects.toolsObserved,
        encodePayload({ account: api.principal, server: 'shared', tools: [{ name: 'echo' }], transport: 'http' }),
      );
      const [a, b] = await Promise.all([viaFirst, secondRefresh]);

      // One connect between them: with the stored verdict, a modern server needs no round trip for it, a legacy one its handshake.
      expect(probes(upstream.stats) - base.probes).toBe(era === 'modern' ? 0 : 1);
      expect(upstream.stats.listCalls - base.lists).toBe(3);
      expect(a.server.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'add', 'fail']);
      expect(b.server).toEqual(a.server);
      await new Promise((r) => setTimeout(r, 300));
      await h.nc.flush();
      expect(events.messages).toHaveLength(1);
      expect((await api.act('ListMcpServers')).servers[0].tools).toHaveLength(3);
      events.stop();
      await second.stop();
    });
  });
});
