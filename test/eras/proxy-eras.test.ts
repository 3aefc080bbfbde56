import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload, type ProxyCallReply, type ProxyCallRequest } from '@mcpx/contracts';
import { echoTool, startEverythingServer, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/** A modern server holds no session: any proxy instance serves any call of a run, with the registry's verdict and no probe. */
describe('proxy across eras, two instances', () => {
  let system: ProxySystem;
  let modern: TestMcpServer;
  let legacy: TestMcpServer;
  let seq = 0;

  /** A call sent to one named instance (the sticky route), as a runtime whose run moved would. */
  const callOn = async (instance: string, run: string, tool: string, text: string): Promise<ProxyCallReply> => {
    const req: ProxyCallRequest = {
      account: system.account,
      agent: system.agentId('agent'),
      run,
      tool,
      arguments: { text },
      callId: `c${++seq}`,
    };
    const msg = await system.nc.request(system.subjects.proxyInstanceCall(instance), encodePayload(req), {
      timeout: 20_000,
    });
    return decodePayload<ProxyCallReply>(msg.data);
  };

  beforeAll(async () => {
    [system, modern, legacy] = await Promise.all([
      ProxySystem.start({ proxies: 2, env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0' } }),
      startTestMcpServer({ era: 'modern', tools: [echoTool()] }),
      startTestMcpServer({ era: 'legacy', tools: [echoTool()] }),
    ]);
    await system.setServer('modern', modern.url);
    await system.setServer('legacy', legacy.url);
    await system.createAgent('agent', ['modern', 'legacy'], 2);
  });
  afterAll(async () => {
    await system?.stop();
    await Promise.all([modern, legacy].map((s) => s?.close()));
  });

  it('serves the calls of one run on both instances against a modern server, with no discover or handshake beyond the first discovery', async () => {
    try {
      expect(modern.stats.discovers).toBe(1);
      const [a, b] = system.proxies.map((p) => p.instance) as [string, string];
      for (let i = 0; i < 6; i++) {
        const instance = i % 2 === 0 ? a : b;
        const reply = await callOn(instance, 'shared-run', 'modern__echo', `m${i}`);
        expect(reply).toMatchObject({ ok: true, instance, result: { text: `echo: m${i}` } });
      }
      expect(modern.stats.calls).toBe(6);
      expect(modern.stats.discovers).toBe(1);
      expect(modern.stats.handshakes).toBe(0);
    } finally {
      await system.client.endRun(system.account, 'shared-run');
    }
  });

  it('shares one modern connection among the runs of an instance, closed with the last of them', async () => {
    const proxy = system.proxies[0]!;
    await eventually(async () => (proxy.stats().runs === 0 ? true : undefined), 10_000, 'earlier runs ended');
    const base = proxy.stats().connections;
    const runs = ['s1', 's2', 's3', 's4', 's5'];
    for (const run of runs) expect((await callOn(proxy.instance, run, 'modern__echo', run)).ok).toBe(true);
    expect(proxy.stats().connections - base).toBe(1);
    for (const run of runs.slice(0, -1)) await system.client.endRun(system.account, run);
    await eventually(async () => (proxy.stats().runs <= 1 ? true : undefined), 10_000, 'four runs ended');
    expect(proxy.stats().connections - base).toBe(1);
    // The last run still calls on it.
    expect(await callOn(proxy.instance, 's5', 'modern__echo', 'still')).toMatchObject({
      ok: true,
      result: { text: 'echo: still' },
    });
    await system.client.endRun(system.account, 's5');
    await eventually(
      async () => (proxy.stats().connections === base ? true : undefined),
      10_000,
      'the shared connection closed with the last run',
    );
    expect(modern.stats.handshakes).toBe(0);
  });

  it('keeps a legacy run on its session: one handshake per instance that serves it', async () => {
    const before = legacy.stats.handshakes;
    const first = await system.call('agent', 'legacy-run', 'legacy__echo', { text: 'l0' });
    for (let i = 1; i < 5; i++) {
      const next = await system.call('agent', 'legacy-run', 'legacy__echo', { text: `l${i}` });
      expect(next.instance).toBe(first.instance);
      expect(next.result.text).toBe(`echo: l${i}`);
    }
    expect(legacy.stats.handshakes - before).toBe(1);
    await system.client.endRun(system.account, 'legacy-run');
  });
});

/** The `initialize` requests among the JSON-RPC bodies a front server forwarded. */
const initializes = (front: FrontServer): number =>
  front.bodies.filter((b) => (b as { method?: string }).method === 'initialize').length;

/**
 * A legacy server that restarted lost every session: the run's next call costs one fresh
 * handshake and no error, whether it answers 404 (the 2025 spec; the SDK v1 test server) or 400
 * "No valid session ID" (server-everything). The server sits behind a forwarding front on a fixed
 * port, so "the same" server comes back at the same URL.
 */
describe.each([
  {
    answer: '404',
    start: async () => ({
      url: (s: string) => `${s}/mcp`,
      stop: (await startTestMcpServer({ era: 'legacy', tools: [echoTool()] })) as {
        url: string;
        close(): Promise<void>;
      },
      tool: 'up__echo',
      args: (t: string) => ({ text: t }),
      expect: (t: string) => `echo: ${t}`,
    }),
  },
  {
    answer: '400',
    start: async () => ({
      url: (s: string) => `${s}/mcp`,
      stop: (await startEverythingServer('streamableHttp')) as { url: string; close(): Promise<void> },
      tool: 'up__echo',
      args: (t: string) => ({ message: t }),
      expect: (t: string) => `Echo: ${t}`,
    }),
  },
])('a legacy server that lost its sessions (answers $answer)', ({ start }) => {
  let system: ProxySystem;
  let upstream: Awaited<ReturnType<typeof start>>;
  let front: FrontServer;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0' } }),
      start(),
    ]);
    front = await startFrontServer({ mode: 'forward', target: new URL(upstream.stop.url).origin });
    await system.setServer('up', upstream.url(front.origin));
    await system.createAgent('agent', ['up'], 1);
  });
  afterAll(async () => {
    await system?.stop();
    await front?.close();
    await upstream?.stop.close();
  });

  it('re-handshakes once and answers, and the run goes on on its new session', async () => {
    const call = async (text: string): Promise<string | undefined> =>
      (await system.call('agent', 'restart-run', upstream.tool, upstream.args(text))).result.text;
    expect(await call('before')).toBe(upstream.expect('before'));
    // The restart: a new server process behind the same URL, knowing none of the old sessions.
    const port = front.port;
    await Promise.all([front.close(), upstream.stop.close()]);
    upstream = await start();
    front = await startFrontServer({ mode: 'forward', target: new URL(upstream.stop.url).origin }, port);
    expect(await call('after')).toBe(upstream.expect('after'));
    expect(initializes(front)).toBe(1);
    expect(await call('later')).toBe(upstream.expect('later'));
    expect(initializes(front)).toBe(1);
  });
});
