import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { addTool, echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const TOKEN = 'gho_observedToken789';

async function agentTools(api: ApiClient, agent: string): Promise<string[]> {
  return ((await api.act('ListAgentTools', { agent })).tools as Array<{ name: string }>).map((t) => t.name).sort();
}

async function github(api: ApiClient): Promise<RedactedMcpServer | undefined> {
  return ((await api.act('ListMcpServers')).servers as RedactedMcpServer[]).find((s) => s.name === 'github');
}

/**
 * Quiet discovery reaches built-ins too: the tools a proxy lists when it opens a connection to a
 * built-in (no mcp_servers row) are recorded like any discovery's, so a built-in that is `ok`
 * and changed its tools is current after the next run's first call, with no RefreshMcpServer.
 */
describe('built-in servers: quiet discovery through the proxy', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let runtime: ProxyClient;

  beforeAll(async () => {
    // The github built-in's test endpoint answers only with the vendor's token.
    upstream = await startTestMcpServer({
      requireHeader: { name: 'Authorization', value: `Bearer ${TOKEN}` },
      tools: [{ ...echoTool(), annotations: { readOnlyHint: true } }],
    });
    // No background probe within the test: only the proxy's observation can bring the new list.
    h = await RegistryHarness.start({
      proxy: true,
      registry: { reprobe: { baseMs: 600_000 } },
      env: { BUILTIN_ENDPOINTS: `github=${upstream.url}` },
    });
    runtime = new ProxyClient(h.nc, h.subjects);
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  it("records a built-in's changed tool list observed by a new run's connection, and the agent's tools follow", async () => {
    const api = h.api();
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: TOKEN });
    const discovered = (await api.act<{ server: RedactedMcpServer }>('RefreshMcpServer', { name: 'github' })).server;
    expect(discovered).toMatchObject({ builtin: true, status: { state: 'ok' } });
    expect(discovered.tools.map((t) => t.name)).toEqual(['echo']);
    const { agent } = await api.act<{ agent: { id: string } }>('CreateAgent', {
      name: 'dev',
      definition: { mcpServers: ['github'] },
    });
    await eventually(
      async () => ((await agentTools(api, 'dev')).join() === 'github__echo' ? true : undefined),
      15_000,
      'the discovered tools projected',
    );

    // The server's tools change while it is ok; nothing has connected since.
    upstream.setTools([{ ...echoTool(), annotations: { readOnlyHint: true } }, addTool()]);
    expect((await github(api))?.tools.map((t) => t.name)).toEqual(['echo']);

    // A new run's first call opens a connection; the proxy lists its tools on the way.
    const run = 'observe-1';
    const out = await runtime.call({
      account: api.principal,
      agent: agent.id,
      run,
      tool: 'github__echo',
      arguments: { text: 'hi' },
    });
    expect(out.result.text).toBe('echo: hi');
    try {
      const recorded = await eventually(
        async () => {
          const s = await github(api);
          return s?.tools.some((t) => t.name === 'add') ? s : undefined;
        },
        15_000,
        'the observed list recorded',
      );
      expect(recorded.status.state).toBe('ok');
      expect(recorded.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
      await eventually(
        async () => ((await agentTools(api, 'dev')).includes('github__add') ? true : undefined),
        15_000,
        "the agent's tools changed",
      );
      expect(await agentTools(api, 'dev')).toEqual(['github__add', 'github__echo']);
    } finally {
      await runtime.endRun(api.principal, run);
    }
    // And the new tool runs, with the vendor's token.
    const added = await runtime.call({
      account: api.principal,
      agent: agent.id,
      run: 'observe-2',
      tool: 'github__add',
      arguments: { a: 2, b: 3 },
    });
    expect(added.result.text).toBe('5');
    await runtime.endRun(api.principal, 'observe-2');
  });
});
