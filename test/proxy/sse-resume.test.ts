import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProxySystem } from '../support/proxy-system.js';

/**
 * An upstream speaking Streamable HTTP by hand on loopback: every `tools/call` is answered with an
 * SSE stream that sends a priming event (an id and `retry: 10`) and then loses its connection; a
 * GET with that event id as `Last-Event-ID` redelivers the response, unless the call asked for
 * `refuse`, whose resumption GET gets 405. A GET without `Last-Event-ID` gets 405 too.
 */
async function startBreakingUpstream(): Promise<{ url: string; resumptions: IncomingHttpHeaders[]; server: Server }> {
  const sessionId = 'session-breaking';
  const resumptions: IncomingHttpHeaders[] = [];
  /** Per event id: the response its stream owed, or `refuse`. */
  const owed = new Map<string, string>();
  let calls = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      const from = req.headers['last-event-id'];
      if (from !== undefined) resumptions.push(req.headers);
      const response = typeof from === 'string' ? owed.get(from) : undefined;
      if (response === undefined || response === 'refuse') return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': sessionId });
      return void res.end(`id: ${from}-r\ndata: ${response}\n\n`);
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      const msg = JSON.parse(raw) as {
        id?: number | string;
        method: string;
        params?: { arguments?: { text?: string } };
      };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const json = (result: unknown): void => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      };
      if (msg.method === 'initialize')
        return json({
          protocolVersion: '2025-11-25',
          serverInfo: { name: 'breaking', version: '1' },
          capabilities: { tools: {} },
        });
      if (msg.method === 'tools/list')
        return json({
          tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
        });
      if (msg.method !== 'tools/call') return json({});
      const text = String(msg.params?.arguments?.text);
      const eventId = `ev-${++calls}`;
      owed.set(
        eventId,
        text === 'refuse'
          ? 'refuse'
          : JSON.stringify({
              jsonrpc: '2.0',
              id: msg.id,
              result: { content: [{ type: 'text', text: `echo: ${text}` }] },
            }),
      );
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': sessionId });
      res.write(`id: ${eventId}\nretry: 10\ndata: \n\n`, () => res.socket?.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, resumptions, server };
}

describe('a tools/call whose response stream breaks, through NATS and the proxy', () => {
  let system: ProxySystem;
  let upstream: Awaited<ReturnType<typeof startBreakingUpstream>>;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([ProxySystem.start(), startBreakingUpstream()]);
    await system.setServer('breaking', upstream.url);
    await system.createAgent('agent', ['breaking'], 1);
  });

  afterAll(async () => {
    await system?.stop();
    upstream?.server.closeAllConnections();
    await new Promise((resolve) => upstream?.server.close(resolve));
  });

  it('is resumed with Last-Event-ID on the session, and the agent gets the result', async () => {
    const { result } = await system.call('agent', 'r1', 'breaking__echo', { text: 'hello' });
    expect(result.text).toBe('echo: hello');
    expect(upstream.resumptions).toHaveLength(1);
    expect(upstream.resumptions[0]).toMatchObject({
      'last-event-id': 'ev-1',
      'mcp-session-id': 'session-breaking',
      accept: 'text/event-stream',
    });
    expect(system.proxies[0]!.stats().resumptions).toEqual({ resumed: 1, failed: 0 });
  });

  it('answers maybe_executed (never retried) when the upstream refuses the resumption', async () => {
    const err = await system.callError('agent', 'r1', 'breaking__echo', { text: 'refuse' });
    expect(err.code).toBe('maybe_executed');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/could not be resumed.*HTTP 405/);
    expect(upstream.resumptions.at(-1)?.['last-event-id']).toBe('ev-2');
    expect(system.proxies[0]!.stats().resumptions).toEqual({ resumed: 1, failed: 1 });
  });
});
