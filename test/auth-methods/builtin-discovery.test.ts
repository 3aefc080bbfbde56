import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { findBuiltin } from '@mcpx/domain';
import { echoTool, freePort, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const TOKEN = 'lin_discoveryToken';

/**
 * Built-in discovery shares custom servers' machinery: one discovery per (account, slug) across
 * registry instances (Redis single flight), the per-instance concurrency bound, and the background
 * re-probe with backoff, which also discovers a built-in still `unknown` (just lit).
 */
describe('built-in discovery: single flight and background re-probe', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let slow: FrontServer;
  let downPort: number;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    upstream = await startTestMcpServer({
      requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` },
      tools: [{ ...echoTool(), annotations: { readOnlyHint: true } }],
    });
    // Every request to the github endpoint takes 150 ms, so racing refreshes overlap for sure.
    slow = await startFrontServer({ mode: 'forward', target: upstream.url, delayMs: 150 });
    downPort = await freePort();
    // A fast background re-probe (200 ms base) so probes are seen within the test.
    h = await RegistryHarness.start({
      registry: { reprobe: { baseMs: 200 } },
      env: { BUILTIN_ENDPOINTS: `github=${slow.origin}/mcp,linear=http://127.0.0.1:${downPort}/mcp` },
    });
  });
  afterAll(async () => {
    await h?.stop();
    for (const c of closers) await c().catch(() => undefined);
    await slow?.close();
    await upstream?.close();
  });

  const status = async (api: ApiClient, slug: string): Promise<RedactedMcpServer | undefined> =>
    ((await api.act('ListMcpServers')).servers as RedactedMcpServer[]).find((s) => s.name === slug);

  it('a just-lit built-in is discovered in the background; two concurrent refreshes on two registries list tools once', async () => {
    const api = h.api();
    const lit = await api.act<{ servers: RedactedMcpServer[] }>('SetVendorConnection', {
      vendor: 'github',
      accessToken: TOKEN,
    });
    expect(lit.servers[0]!.status.state).toBe('unknown');
    // Nobody pressed refresh: the re-probe discovers it (the fallback list gives way to the real one).
    const ok = await eventually(
      async () => {
        const s = await status(api, 'github');
        return s?.status.state === 'ok' ? s : undefined;
      },
      15_000,
      'a background discovery',
    );
    expect(ok.tools.map((t) => t.name)).toEqual(['echo']);

    const second = await h.addRegistry();
    const lists = upstream.stats.listCalls;
    const [a, b] = await Promise.all([
      api.act('RefreshMcpServer', { name: 'github' }),
      new ApiClient(second.url, api.key).act('RefreshMcpServer', { name: 'github' }),
    ]);
    expect(upstream.stats.listCalls - lists).toBe(1);
    expect(a.server).toMatchObject({ name: 'github', builtin: true, status: { state: 'ok' } });
    expect(b.server).toEqual(a.server);
    await second.stop();
  });

  it('a built-in lit with no discovery row (lit before background probing) is probed once a registry starts', async () => {
    const api = h.api();
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: TOKEN });
    // As a registry of the previous release left it: the connection, and no discovery row.
    await h.sql.deleteFrom('registry.builtin_discoveries').where('account_id', '=', api.principal).execute();
    expect((await status(api, 'github'))?.status.state).toBe('unknown');
    const lists = upstream.stats.listCalls;
    const restarted = await h.addRegistry();
    const ok = await eventually(
      async () => {
        const s = await status(api, 'github');
        return s?.status.state === 'ok' ? s : undefined;
      },
      15_000,
      'the first probe after a start',
    );
    expect(ok.tools.map((t) => t.name)).toEqual(['echo']);
    expect(upstream.stats.listCalls).toBeGreaterThan(lists);
    await restarted.stop();
  });

  it('a built-in whose endpoint is down is re-probed with backoff, and is ok once the endpoint is up', async () => {
    const api = h.api();
    await api.act('SetVendorConnection', { vendor: 'linear', accessToken: TOKEN });
    const failing = await eventually(
      async () => {
        const s = await status(api, 'linear');
        return (s?.status.failures ?? 0) >= 2 ? s : undefined;
      },
      15_000,
      'failing background probes',
    );
    expect(failing.status.state).toBe('error');
    expect(failing.status.error).toContain('ECONNREFUSED');
    // While it is down, its fallback list still serves.
    expect(failing.tools.map((t) => t.name)).toEqual(findBuiltin('linear')!.fallbackTools.map((t) => t.name));

    const back = await startTestMcpServer({
      port: downPort,
      requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` },
    });
    closers.push(() => back.close());
    const recovered = await eventually(
      async () => {
        const s = await status(api, 'linear');
        return s?.status.state === 'ok' ? s : undefined;
      },
      20_000,
      'recovery',
    );
    expect(recovered.status.failures).toBeUndefined();
    expect(recovered.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
  });
});
