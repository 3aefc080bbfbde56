import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { holdTool as hold, startTestMcpServer, type HeldCalls, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { post } from './raw-mcp.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/** What the remote server saw of each `hold` call, by its `tag`. */
const seen: HeldCalls = new Map();
const holdTool = hold(seen);

/**
 * A client's cancel reaches the remote server: the SDK v2 client (2026-07-28) and the SDK v1
 * client (2025, stateless serving) each abort a call in flight through the endpoint, and the
 * remote tool's own request signal fires (the endpoint sends `mcp.proxy.cancel`, the proxy cancels
 * the remote request), while the next call of the same client runs.
 */
describe('the agent MCP endpoint: a client’s cancel reaches the remote server', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let old: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    const ping = { name: 'ping', handler: () => ({ content: [{ type: 'text' as const, text: 'pong' }] }) };
    [sys, upstream, old] = await Promise.all([
      startEndpointSystem(),
      startTestMcpServer({ era: 'modern', tools: [holdTool, ping] }),
      startTestMcpServer({ era: 'legacy', tools: [holdTool, ping] }),
    ]);
    await sys.system.setServer('up', upstream.url);
    await sys.system.setServer('old', old.url);
    await sys.system.createAgent('worker', ['up', 'old'], 4);
    ({ token } = await sys.token('worker'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([upstream?.close(), old?.close()]);
  });

  const started = async (...tags: string[]): Promise<boolean> =>
    await eventually(
      async () => (tags.every((t) => seen.get(t)?.started) ? true : undefined),
      20_000,
      `${tags.join(', ')}: the remote calls to start`,
    );
  const cancelledUpstream = async (tag: string): Promise<boolean> =>
    await eventually(
      async () => (seen.get(tag)?.cancelled ? true : undefined),
      20_000,
      `${tag}: the remote server to see the cancel`,
    );

  const headers = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  /** `call(signal)` starts the hold call in the client's own way of taking an abort signal. */
  async function cancelThrough(call: (signal: AbortSignal) => Promise<unknown>, tag: string): Promise<void> {
    const abort = new AbortController();
    const pending = call(abort.signal);
    pending.catch(() => undefined);
    await eventually(
      async () => (seen.get(tag)?.started ? true : undefined),
      20_000,
      `${tag}: the remote call to start`,
    );
    abort.abort();
    await expect(pending).rejects.toThrow();
    await eventually(
      async () => (seen.get(tag)?.cancelled ? true : undefined),
      20_000,
      `${tag}: the remote server to see the cancel`,
    );
    await eventually(
      async () => (sys.system.proxies.every((p) => p.stats().inflight === 0) ? true : undefined),
      20_000,
      `${tag}: no call left in flight`,
    );
  }

  it('passes an SDK v2 client’s abort on to the remote call', async () => {
    const client = new Client({ name: 'cancel-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('worker')), { requestInit: { headers: headers() } }),
    );
    try {
      await cancelThrough(
        (signal) => client.callTool({ name: 'up__hold', arguments: { tag: 'v2' } }, { signal, timeout: 90_000 }),
        'v2',
      );
      expect(await client.callTool({ name: 'up__ping', arguments: {} })).toMatchObject({
        content: [{ type: 'text', text: 'pong' }],
      });
    } finally {
      await client.close();
    }
  }, 90_000);

  it('passes an SDK v1 client’s cancel (notifications/cancelled) on to the remote call', async () => {
    const client = new V1Client({ name: 'cancel-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(sys.urlOf('worker')), { requestInit: { headers: headers() } }));
    try {
      await cancelThrough(
        (signal) =>
          client.callTool({ name: 'up__hold', arguments: { tag: 'v1' } }, undefined, { signal, timeout: 90_000 }),
        'v1',
      );
      expect(await client.callTool({ name: 'up__ping', arguments: {} })).toMatchObject({
        content: [{ type: 'text', text: 'pong' }],
      });
    } finally {
      await client.close();
    }
  }, 90_000);

  it('a runtime’s cancel reaches a modern and a legacy server; a cancel naming the call under another run or account is ignored', async () => {
    const { client, account } = sys.system;
    for (const server of ['up', 'old']) {
      const run = `rt-${server}`;
      const kept = sys.system.call(
        'worker',
        run,
        `${server}__hold`,
        { tag: `${server}-kept` },
        { callId: 'c-kept', timeoutMs: 60_000 },
      );
      const cut = sys.system.call(
        'worker',
        run,
        `${server}__hold`,
        { tag: `${server}-cut` },
        { callId: 'c-cut', timeoutMs: 60_000 },
      );
      kept.catch(() => undefined);
      cut.catch(() => undefined);
      await started(`${server}-kept`, `${server}-cut`);
      // Another run's and another account's cancel of the same call id, then the call's own cancel
      // of its sibling: one connection, so the proxy hears them in this order.
      await client.cancel(account, `${run}-other`, 'c-kept');
      await client.cancel(`${account}x`, run, 'c-kept');
      await client.cancel(account, run, 'c-cut');
      await expect(cut).rejects.toMatchObject({ code: 'cancelled' });
      await cancelledUpstream(`${server}-cut`);
      expect(seen.get(`${server}-kept`)?.cancelled).toBe(false);
      expect(sys.system.proxies.reduce((n, p) => n + p.stats().inflight, 0)).toBe(1);
      await client.cancel(account, run, 'c-kept');
      await expect(kept).rejects.toMatchObject({ code: 'cancelled' });
      await cancelledUpstream(`${server}-kept`);
    }
  }, 120_000);

  it('a 2025 client’s notifications/cancelled stops only its own token’s call: another token naming the same request id is ignored', async () => {
    const other = (await sys.token('worker')).token;
    const url = sys.urlOf('worker');
    const legacy = { 'mcp-protocol-version': '2025-11-25' };
    const call = (id: number, tag: string) =>
      post(
        url,
        token,
        { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'old__hold', arguments: { tag } } },
        legacy,
      );
    const cancel = (who: string, requestId: number) =>
      post(url, who, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } }, legacy);
    const kept = call(7001, 'tok-kept');
    const cut = call(7002, 'tok-cut');
    kept.catch(() => undefined);
    cut.catch(() => undefined);
    await started('tok-kept', 'tok-cut');
    // The endpoint sends both cancels it applies on one NATS connection: the proxy hears them in order.
    expect((await cancel(other, 7001)).status).toBe(202);
    expect((await cancel(token, 7002)).status).toBe(202);
    await cancelledUpstream('tok-cut');
    expect(seen.get('tok-kept')?.cancelled).toBe(false);
    expect((await cancel(token, 7001)).status).toBe(202);
    await cancelledUpstream('tok-kept');
    await Promise.allSettled([kept, cut]);
  }, 90_000);
});
