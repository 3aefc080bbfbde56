/**
 * Attack: a remote MCP server lists its tools normally, then answers a `tools/call` (or the GET
 * stream the proxy's connection opens) with a body built to exhaust the proxy's memory. The
 * proxy runs as its own process, so its peak RSS is its own; the hostile server runs here. Each
 * attack's growth is measured from the RSS the attacks before it left (the kernel's high-water
 * mark, reset before each): an unbounded body would pass 64 MiB whatever came before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostileBody, startHostileMcpServer, type HostileMcpServer } from '../servers/hostile-mcp-server.js';
import { watchPeakRss } from '../servers/hostile-peak-rss.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/** The memory an attack may add to the proxy's peak. */
const MAX_GROWTH_MIB = 64;

const serverName = (body: HostileBody): string => body.replace(/-/g, '_');

describe('a hostile server cannot exhaust the proxy on the call path', () => {
  let hostile: HostileMcpServer;
  let system: ProxySystem;
  let proxy: ProxyProcess;
  // The bound each attack hits: the outbound fetch's, named in its message; a declared
  // Content-Length may meet the MCP client's own response bound first (it checks before reading).
  const outboundBound = (bound: string): RegExp =>
    new RegExp(`response from http://127\\.0\\.0\\.1:\\d+ too large: .* \\(bound ${bound} = \\d+`);
  const calls: Array<{ body: HostileBody; bound: string; named: RegExp }> = [
    { body: HostileBody.gzipBomb, bound: 'maxBodyBytes', named: outboundBound('maxBodyBytes') },
    { body: HostileBody.endlessLine, bound: 'maxSseEventBytes', named: outboundBound('maxSseEventBytes') },
    { body: HostileBody.endlessEvents, bound: 'maxSseEvents', named: outboundBound('maxSseEvents') },
    {
      body: HostileBody.hugeContentLength,
      bound: 'maxBodyBytes',
      named: /declared Content-Length of 10737418240 bytes|MCP response is larger than \d+ bytes/,
    },
  ];

  beforeAll(async () => {
    hostile = await startHostileMcpServer();
    // The registry and projector here; the only proxy is a process of its own.
    system = await ProxySystem.start({ proxies: 0 });
    proxy = await spawnProxyProcess(system);
    for (const { body } of calls) await system.setServer(serverName(body), hostile.url(body, 'call'));
    await system.setServer('get_bomb', hostile.url(HostileBody.gzipBomb, 'get'));
    await system.createAgent('agent', [...calls.map((c) => serverName(c.body)), 'get_bomb'], 2 * (calls.length + 1));
  });
  afterAll(async () => {
    await proxy?.stop();
    await system?.stop();
    await hostile?.close();
  });

  async function stillServing(server: string): Promise<void> {
    expect(proxy.child.exitCode).toBeNull();
    expect((await fetch(`${proxy.url}/healthz`)).status).toBe(200);
    // The same server's harmless tool, on the same proxy.
    const { result } = await system.call('agent', 'after', `${server}__ping`);
    expect(JSON.stringify(result)).toContain('pong');
  }

  for (const { body, bound, named } of calls) {
    it(`${body} as a tools/call answer: an error naming ${bound}, proxy serving, peak RSS within ${MAX_GROWTH_MIB} MiB`, async () => {
      const server = serverName(body);
      const before = hostile.attacks.length;
      const peak = watchPeakRss(proxy.child.pid!);
      const err = await system.callError('agent', `run-${server}`, `${server}__fetch_data`);
      const growth = peak.growthMiB();

      // maybe_executed: the call was sent and its answer cut at the bound (the body broke off, or
      // a cut stream ended with its stand-in answer, which names the bound), so it may have run;
      // never retried as is.
      expect(err.code).toBe('maybe_executed');
      expect(err.retryable).toBe(false);
      expect(err.message).toMatch(named);
      const attack = hostile.attacks[before];
      expect(attack?.body).toBe(body);
      await attack!.closed;
      expect(attack!.cancelled).toBe(true);
      expect(growth).toBeLessThanOrEqual(MAX_GROWTH_MIB);
      await stillServing(server);
    });
  }

  it(`a gzip bomb on the GET stream is cut, calls on that server go on, peak RSS within ${MAX_GROWTH_MIB} MiB`, async () => {
    const before = hostile.attacks.length;
    const peak = watchPeakRss(proxy.child.pid!);
    // The first call opens the connection, and with it the GET stream the server bombs.
    const { result } = await system.call('agent', 'run-get', 'get_bomb__ping');
    expect(JSON.stringify(result)).toContain('pong');
    const attack = await eventually(
      async () => hostile.attacks.slice(before).find((a) => a.body === HostileBody.gzipSseBomb),
      15_000,
      'the GET stream bombed',
    );
    await attack.closed;
    expect(attack.cancelled).toBe(true);
    await stillServing('get_bomb');
    expect(peak.growthMiB()).toBeLessThanOrEqual(MAX_GROWTH_MIB);
  });
});
