import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/** What the remote server saw of each `hold` call, by its `tag`. */
const seen = new Map<string, { started: boolean; cancelled: boolean }>();

/** `hold {tag}` answers only after a minute, and notes when its request is cancelled. */
const holdTool: TestTool = {
  name: 'hold',
  inputSchema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
  handler: async (args, { signal }) => {
    const entry = { started: true, cancelled: false };
    seen.set(String(args.tag), entry);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, 60_000);
      const onAbort = (): void => {
        clearTimeout(timer);
        entry.cancelled = true;
        reject(new Error('cancelled'));
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    return { content: [{ type: 'text', text: 'held' }] };
  },
};

/**
 * A client's cancel reaches the remote server: the SDK v2 client (2026-07-28) and the SDK v1
 * client (2025, stateless serving) each abort a call in flight through the endpoint, and the
 * remote tool's own request signal fires (the endpoint sends `mcp.proxy.cancel`, the proxy cancels
 * the remote request), while the next call of the same client runs.
 */
describe('the agent MCP endpoint: a client’s cancel reaches the remote server', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem(),
      startTestMcpServer({ era: 'modern', tools: [holdTool, { name: 'ping', handler: () => ({ content: [{ type: 'text', text: 'pong' }] }) }] }),
    ]);
    await sys.system.setServer('up', upstream.url);
    await sys.system.createAgent('worker', ['up'], 2);
    ({ token } = await sys.token('worker'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const headers = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  /** `call(signal)` starts the hold call in the client's own way of taking an abort signal. */
  async function cancelThrough(call: (signal: AbortSignal) => Promise<unknown>, tag: string): Promise<void> {
    const abort = new AbortController();
    const pending = call(abort.signal);
    pending.catch(() => undefined);
    await eventually(async () => (seen.get(tag)?.started ? true : undefined), 20_000, `${tag}: the remote call to start`);
    abort.abort();
    await expect(pending).rejects.toThrow();
    await eventually(async () => (seen.get(tag)?.cancelled ? true : undefined), 20_000, `${tag}: the remote server to see the cancel`);
    await eventually(async () => (sys.system.proxies.every((p) => p.stats().inflight === 0) ? true : undefined), 20_000, `${tag}: no call left in flight`);
  }

  it('passes an SDK v2 client’s abort on to the remote call', async () => {
    const client = new Client({ name: 'cancel-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(sys.urlOf('worker')), { requestInit: { headers: headers() } }));
    try {
      await cancelThrough((signal) => client.callTool({ name: 'up__hold', arguments: { tag: 'v2' } }, { signal, timeout: 90_000 }), 'v2');
      expect(await client.callTool({ name: 'up__ping', arguments: {} })).toMatchObject({ content: [{ type: 'text', text: 'pong' }] });
    } finally {
      await client.close();
    }
  }, 90_000);

  it('passes an SDK v1 client’s cancel (notifications/cancelled) on to the remote call', async () => {
    const client = new V1Client({ name: 'cancel-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(sys.urlOf('worker')), { requestInit: { headers: headers() } }));
    try {
      await cancelThrough((signal) => client.callTool({ name: 'up__hold', arguments: { tag: 'v1' } }, undefined, { signal, timeout: 90_000 }), 'v1');
      expect(await client.callTool({ name: 'up__ping', arguments: {} })).toMatchObject({ content: [{ type: 'text', text: 'pong' }] });
    } finally {
      await client.close();
    }
  }, 90_000);
});
