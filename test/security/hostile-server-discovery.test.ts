/**
 * Attack: a remote MCP server answers discovery's `tools/list` with a body built to exhaust the
 * registry's memory. The registry
 * runs as its own process, so its peak RSS is its own; the hostile server runs here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostileBody, startHostileMcpServer, type HostileMcpServer } from '../servers/hostile-mcp-server.js';
import { watchPeakRss } from '../servers/hostile-peak-rss.js';
import { ApiClient } from '../support/api-client.js';
import { ProcessSystem, type ServiceProcess } from '../support/system.js';

/** The memory an attack may add to the registry's peak. */
const MAX_GROWTH_MIB = 64;

interface ServerView {
  name: string;
  status: { state: string; error?: string };
  tools: unknown[];
}

describe('a hostile server cannot exhaust the registry during discovery', () => {
  let hostile: HostileMcpServer;
  let system: ProcessSystem;
  let registry: ServiceProcess;
  let api: ApiClient;

  beforeAll(async () => {
    hostile = await startHostileMcpServer();
    // The local profile: loopback servers are allowed, as on a developer's machine.
    system = await ProcessSystem.start({
      env: { OUTBOUND_PROFILE: 'local', LOG_LEVEL: 'warn' },
      projectors: 0,
      proxies: 0,
    });
    registry = system.services.find((s) => s.name === 'registry')!;
    api = new ApiClient(system.apiUrl);
  });
  afterAll(async () => {
    await system?.stop();
    await hostile?.close();
  });

  /** Still answering: the health check, and another action of the same account. */
  async function stillServing(name: string): Promise<void> {
    expect(registry.child.exitCode).toBeNull();
    expect((await fetch(`${system.apiUrl}/healthz`)).status).toBe(200);
    const { servers } = await api.act<{ servers: ServerView[] }>('ListMcpServers');
    expect(servers.map((s) => s.name)).toContain(name);
    // Gone, so that re-probes of this server do not run into the next attack's measurement.
    await api.act('DeleteMcpServer', { name });
  }

  const cases: Array<{ body: HostileBody; bound: string; also?: string }> = [
    { body: HostileBody.gzipBomb, bound: 'maxBodyBytes' },
    { body: HostileBody.gzipSseBomb, bound: 'maxSseEventBytes' },
    { body: HostileBody.endlessLine, bound: 'maxSseEventBytes' },
    { body: HostileBody.endlessEvents, bound: 'maxSseEvents' },
    // A declared 10 GiB is refused unread by the discovery's whole budget (32 MiB) before the
    // per-body bound looks at it: either names a bound that was really passed.
    {
      body: HostileBody.hugeContentLength,
      bound: 'maxTotalBytes',
      also: 'declared Content-Length of 10737418240 bytes',
    },
  ];

  for (const { body, bound, also } of cases) {
    it(`${body} as the tools/list answer: status error naming ${bound}, registry serving, peak RSS within ${MAX_GROWTH_MIB} MiB`, async () => {
      const before = hostile.attacks.length;
      const peak = watchPeakRss(registry.child.pid!);
      const { server } = await api.act<{ server: ServerView }>('SetMcpServer', {
        name: body,
        config: { url: hostile.url(body, 'list') },
      });
      const growth = peak.growthMiB();

      expect(server.status.state).toBe('error');
      expect(server.status.error).toContain(`(bound ${bound} = `);
      expect(server.status.error).toContain(`response from ${hostile.origin} too large`);
      if (also !== undefined) expect(server.status.error).toContain(also);
      expect(server.tools).toEqual([]);
      // The attack was served, and the registry cut it off (the server saw the client leave).
      const attack = hostile.attacks[before];
      expect(attack?.body).toBe(body);
      await attack!.closed;
      expect(attack!.cancelled).toBe(true);
      expect(growth).toBeLessThanOrEqual(MAX_GROWTH_MIB);
      await stillServing(body);
    });
  }
});
