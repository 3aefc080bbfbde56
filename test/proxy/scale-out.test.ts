import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyServiceName } from '@mcpx/proxy';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/** Every answer to a `$SRV` verb within `ms` (the micro-service protocol: JSON replies, one per instance). */
async function srv(nc: NatsConnection, verb: 'PING' | 'INFO' | 'STATS', name: string, ms = 1_500): Promise<any[]> {
  const inbox = createInbox();
  const out: any[] = [];
  const sub = nc.subscribe(inbox, { callback: (_e, m) => void out.push(m.json()) });
  nc.publish(`$SRV.${verb}.${name}`, '', { reply: inbox });
  await new Promise((r) => setTimeout(r, ms));
  sub.unsubscribe();
  return out;
}

/** Three proxy processes behind one queue group: sticky runs, one handshake per (run, server), survival of a SIGKILL. */
/** Round trips a server spent on connects: `server/discover` probes and `initialize` handshakes. */
const connects = (s: TestMcpServer): number => s.stats.discovers + s.stats.handshakes;

describe.each(['modern', 'legacy'] as const)('proxy scale-out across three instances, a %s server', (era) => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let proxies: ProxyProcess[] = [];

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0, env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0' } }),
      startTestMcpServer({ era }),
    ]);
    proxies = await Promise.all([0, 1, 2].map(() => spawnProxyProcess(system)));
    await system.setServer('demo', upstream.url);
    await system.createAgent('agent', ['demo'], 2);
  });

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    await system?.stop();
    await upstream?.close();
  });

  it('is a NATS micro-service: every instance answers $SRV INFO and STATS with its sticky instance', async () => {
    const name = proxyServiceName(system.subjects.prefix);
    const infos = await srv(system.nc, 'INFO', name);
    expect(infos.map((i) => i.metadata?.instance).sort()).toEqual(proxies.map((p) => p.instance).sort());
    expect(infos[0]?.endpoints.map((e: { subject: string }) => e.subject)).toContain(system.subjects.proxyCall);
    await system.call('agent', 'stats-run', 'demo__echo', { text: 'x' });
    const stats = await srv(system.nc, 'STATS', name);
    expect(stats).toHaveLength(3);
    expect(stats.every((s) => s.type === 'io.nats.micro.v1.stats_response')).toBe(true);
    const calls: number[] = stats.map((s) => s.endpoints[0]?.data?.calls as number);
    expect(calls.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('keeps each run on one instance: one handshake per (run, server) across many calls (none on a modern server)', async () => {
    const before = connects(upstream);
    const runs = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
    const instances = new Map<string, Set<string>>();
    for (let i = 0; i < 8; i++) {
      await Promise.all(
        runs.map(async (run) => {
          const { instance, result } = await system.call('agent', run, 'demo__echo', { text: `${run}-${i}` });
          expect(result.text).toBe(`echo: ${run}-${i}`);
          instances.set(run, (instances.get(run) ?? new Set()).add(instance));
        }),
      );
    }
    for (const run of runs) expect(instances.get(run)?.size).toBe(1);
    // Modern: no handshake at all, and at most one probe per instance (none once the registry's verdict is read).
    if (era === 'legacy') expect(connects(upstream) - before).toBe(runs.length);
    else {
      expect(upstream.stats.handshakes).toBe(0);
      expect(connects(upstream) - before).toBeLessThanOrEqual(proxies.length);
    }
  });

  it("survives the death of its instance: the run's next call falls back to the queue group", async () => {
    const first = await system.call('agent', 'survivor', 'demo__echo', { text: 'one' });
    const victim = proxies.find((p) => p.instance === first.instance);
    expect(victim).toBeDefined();
    await victim!.kill();
    // Gone for NATS too (under load the server may take a moment to see the socket close); a
    // request sent before that would be delivered to the dead connection and wait out its timeout.
    const name = proxyServiceName(system.subjects.prefix);
    await eventually(
      async () => ((await srv(system.nc, 'PING', name, 500)).length === 2 ? true : undefined),
      20_000,
      'the killed instance to leave NATS',
    );
    const before = upstream.stats.handshakes;
    const next = await system.call('agent', 'survivor', 'demo__echo', { text: 'two' });
    expect(next.result.text).toBe('echo: two');
    expect(next.instance).not.toBe(first.instance);
    const handshake = era === 'legacy' ? 1 : 0;
    expect(upstream.stats.handshakes - before).toBe(handshake);
    const third = await system.call('agent', 'survivor', 'demo__echo', { text: 'three' });
    expect(third.instance).toBe(next.instance);
    expect(upstream.stats.handshakes - before).toBe(handshake);
  });
});
