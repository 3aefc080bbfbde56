import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProxySystem } from '../support/proxy-system.js';
import { startHandWrittenLegacy, type HandWrittenServer } from '../support/fixtures/hand-written-mcp.js';

/**
 * An upstream speaking Streamable HTTP by hand on loopback: every `tools/call` is answered with an
 * SSE stream that sends a priming event (an id and `retry: 10`) and then loses its connection; a
 * GET with that event id as `Last-Event-ID` redelivers the response, unless the call asked for
 * `refuse`, whose resumption GET gets 405. A GET without `Last-Event-ID` gets 405 too.
 */
async function startBreakingUpstream(): Promise<HandWrittenServer & { resumptions: IncomingHttpHeaders[] }> {
  const sessionId = 'session-breaking';
  const resumptions: IncomingHttpHeaders[] = [];
  /** Per event id: the response its stream owed, or `refuse`. */
  const owed = new Map<string, string>();
  let calls = 0;
  const server = await startHandWrittenLegacy({
    sessionId,
    tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
    onGet: (req, res) => {
      const from = req.headers['last-event-id'];
      if (from !== undefined) resumptions.push(req.headers);
      const response = typeof from === 'string' ? owed.get(from) : undefined;
      if (response === undefined || response === 'refuse') return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': sessionId });
      res.end(`id: ${from}-r\ndata: ${response}\n\n`);
    },
    onCall: (msg, res) => {
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
    },
  });
  return { ...server, resumptions };
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
    await upstream?.close();
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
