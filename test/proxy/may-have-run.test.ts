import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProxySystem } from '../support/proxy-system.js';
import { startHandWrittenLegacy, type HandWrittenServer } from '../support/fixtures/hand-written-mcp.js';

/**
 * "Nothing ran" and "may have run" are different codes on the wire: `transport_error`
 * (retryable) only when the request never reached the server; `maybe_executed` (never retried by
 * the proxy or its client) when it may have run. Against a legacy server speaking Streamable HTTP
 * by hand on loopback, counting the `tools/call` requests it receives: a call whose response
 * stream breaks with no event id to resume from (`cut`), a plain echo, and a server that is
 * down (nothing listens on its port).
 */
interface BreakingServer extends HandWrittenServer {
  calls: Map<string, number>;
}

async function startLegacyBreaking(port = 0): Promise<BreakingServer> {
  const sessionId = 'session-may-have-run';
  const calls = new Map<string, number>();
  const server = await startHandWrittenLegacy({
    sessionId,
    port,
    tools: [
      { name: 'cut', inputSchema: { type: 'object' } },
      { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
    ],
    onCall: (msg, res, result) => {
      const name = String(msg.params?.name);
      calls.set(name, (calls.get(name) ?? 0) + 1);
      if (name === 'cut') {
        // The call arrived (it may run); its stream opens and breaks before any event, with no id.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': sessionId });
        res.write(': working\n\n', () => setTimeout(() => res.socket?.destroy(), 20));
        return;
      }
      result({ content: [{ type: 'text', text: `echo: ${String(msg.params?.arguments?.text)}` }] });
    },
  });
  return { ...server, calls };
}

async function closeServer(s: BreakingServer | undefined): Promise<void> {
  await s?.close();
}

describe('nothing ran vs may have run, through NATS and the proxy', () => {
  let system: ProxySystem;
  let upstream: BreakingServer;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '0', PROXY_RATE_PER_SERVER: '0' } }),
      startLegacyBreaking(),
    ]);
    await system.setServer('breaking', upstream.url);
    await system.createAgent('agent', ['breaking'], 2);
  });

  afterAll(async () => {
    await system?.stop();
    await closeServer(upstream);
  });

  it('a broken response stream (no event id) reaches the caller as maybe_executed, sent once, never retried', async () => {
    const err = await system.callError('agent', 'r-cut', 'breaking__cut');
    expect(err.code).toBe('maybe_executed');
    expect(err.retryable).toBe(false);
    expect(err.mayHaveRun).toBe(true);
    expect(err.message).toMatch(/may have run/);
    // Neither the proxy nor its client sent it again.
    expect(upstream.calls.get('cut')).toBe(1);
    // The run goes on.
    const next = await system.call('agent', 'r-cut', 'breaking__echo', { text: 'after' });
    expect(next.result.text).toBe('echo: after');
    expect(upstream.calls.get('cut')).toBe(1);
  });

  it('a server that is down answers transport_error (retryable: nothing ran), and the retry runs it once', async () => {
    const port = upstream.port;
    await closeServer(upstream);
    const err = await system.callError('agent', 'r-down', 'breaking__echo', { text: 'down' });
    expect(err.code).toBe('transport_error');
    expect(err.retryable).toBe(true);
    expect(err.mayHaveRun).toBe(false);
    upstream = await startLegacyBreaking(port);
    const again = await system.call('agent', 'r-down', 'breaking__echo', { text: 'down' });
    expect(again.result.text).toBe('echo: down');
    expect(upstream.calls.get('echo')).toBe(1);
  });
});

describe('outbound_refused: the proxy refuses an address its outbound policy does not allow', () => {
  let system: ProxySystem;
  let upstream: BreakingServer;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([ProxySystem.start({ proxies: 0 }), startLegacyBreaking()]);
    // The registry (local profile) discovers the loopback server; the only proxy runs the
    // production profile, whose policy allows plain http to 127.0.0.1 but no loopback address.
    await system.setServer('loop', upstream.url);
    await system.createAgent('agent', ['loop'], 2);
    await system.addProxy({ OUTBOUND_PROFILE: 'production', OUTBOUND_ALLOW_HTTP_HOSTS: '127.0.0.1' });
  });

  afterAll(async () => {
    await system?.stop();
    await closeServer(upstream);
  });

  it('is a typed outbound_refused naming the reason, not retryable, and nothing reached the server', async () => {
    const err = await system.callError('agent', 'r', 'loop__echo', { text: 'x' });
    expect(err.code).toBe('outbound_refused');
    expect(err.retryable).toBe(false);
    expect(err.mayHaveRun).toBe(false);
    expect(err.details).toMatchObject({ reason: 'address', kind: 'loopback' });
    expect(err.message).toMatch(/outbound policy refused/);
    expect(upstream.calls.get('echo') ?? 0).toBe(0);
  });
});
