import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchPeakRss } from '../servers/hostile-peak-rss.js';
import { ApiClient } from '../support/api-client.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { closedWithin, hold, metric, postHead, sendBody, type HeldConnection } from './slow-body-support.js';
import { startEndpointProcess, type EndpointProcess } from '../support/fixtures/endpoint-process.js';

const MiB = 1024 * 1024;
/** The body deadline of the flooded endpoint, shortened for the test (default 10 s). */
const BODY_TIMEOUT_MS = 3_000;
const PATH = '/v1/agents/ops/mcp';
const MCP = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legit', version: '1' } },
});

/**
 * Slow-body floods against the agent endpoint as its own process (the registry beside it for
 * tokens): request bodies are read only after the headers are admitted (route, Host, Origin,
 * token), within a deadline, a per-process budget (an address's quarter of it at most) and a cap
 * of sockets per peer address. Memory is the process's own RSS from /proc.
 */
describe('the endpoint under slow-body floods', () => {
  let system: ProcessSystem;
  let flooded: EndpointProcess;
  let small: EndpointProcess;
  let token: string;

  beforeAll(async () => {
    system = await ProcessSystem.start({ projectors: 0, proxies: 0 });
    const api = new ApiClient(system.apiUrl);
    await api.act('CreateAgent', { name: 'ops', definition: { mcpServers: [] } });
    token = (await api.act<{ token: string }>('CreateAgentToken', { agent: 'ops' })).token;
    [flooded, small] = await Promise.all([
      startEndpointProcess(system, {
        ENDPOINT_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        ENDPOINT_HEADERS_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        ENDPOINT_CONNECTIONS_PER_ADDRESS: '1000',
      }),
      startEndpointProcess(system, { ENDPOINT_BODY_BUDGET_BYTES: String(MiB), ENDPOINT_CONNECTIONS_PER_ADDRESS: '20' }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([flooded?.stop(), small?.stop()]);
    await system?.stop();
  });

  /** A legitimate client's initialize: the answer as far as its JSON-RPC result (or until the service closed). */
  const legitInitialize = async (endpoint: EndpointProcess, from: string): Promise<string> => {
    const c = await hold(
      endpoint.url,
      postHead(PATH, Buffer.byteLength(INITIALIZE), { ...MCP, authorization: `Bearer ${token}` }) + INITIALIZE,
      from,
    );
    await eventually(
      async () => (c.isClosed() || c.received().includes('"result"') ? true : undefined),
      15_000,
      'an answer',
    );
    c.socket.destroy();
    return c.received();
  };

  it('200 stalled bodies of 4 MiB-1 and stalled headers: RSS grows at most 64 MiB, each connection is closed by its deadline, another address is served meanwhile', async () => {
    const pid = flooded.child.pid!;
    const peak = watchPeakRss(pid);
    const conns: HeldConnection[] = [];
    // Half without a token: refused from their headers, their bodies never read (the attack).
    for (let i = 0; i < 100; i++) conns.push(await hold(flooded.url, postHead(PATH, 4 * MiB - 1, MCP)));
    // Half with a valid token: read, until the deadline cuts them.
    for (let i = 0; i < 100; i++)
      conns.push(await hold(flooded.url, postHead(PATH, 4 * MiB - 1, { ...MCP, authorization: `Bearer ${token}` })));
    // And a few that never finish their headers.
    for (let i = 0; i < 10; i++) conns.push(await hold(flooded.url, `POST ${PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\n`));
    // The unauthenticated send all but one byte of their bodies (or what the service takes before
    // it closes), the authenticated 128 KiB (all held: 12.5 MiB, under the address's share), then all stall.
    await Promise.all(conns.slice(0, 200).map((c, i) => sendBody(c, i < 100 ? 4 * MiB - 2 : 128 * 1024)));
    const legit = await legitInitialize(flooded, '127.0.0.2');
    expect(legit).toMatch(/^HTTP\/1\.1 200 /);
    expect(legit).toContain('"protocolVersion"');
    // A bound for a hang, not a time measured: on a service without a body deadline they stay open.
    expect(await closedWithin(conns, BODY_TIMEOUT_MS + 15_000)).toBe(0);
    console.info(
      `endpoint flood: peak RSS growth ${peak.growthMiB().toFixed(1)} MiB over ${(peak.baseline / MiB).toFixed(0)} MiB`,
    );
    expect(peak.growthMiB()).toBeLessThanOrEqual(64);
    const authenticated = conns.slice(100, 200);
    expect(authenticated.filter((c) => /^HTTP\/1\.1 408 /.test(c.received())).length).toBe(100);
    expect(authenticated[0]!.received()).toContain('"bound":"bodyTimeoutMs"');
    expect(await metric(flooded.internalUrl, 'mcpx_inbound_refused_total', 'reason="deadline"')).toBeGreaterThanOrEqual(
      100,
    );
    expect(flooded.logs.join('')).toContain('inbound requests refused');
  });

  it('refuses a wrong token, a foreign Host and an unknown path from the headers, before a byte of the body is sent, and closes', async () => {
    for (const [head, status] of [
      [postHead(PATH, 1000, { ...MCP, authorization: 'Bearer mcpx_at_wrong' }), 401],
      [postHead(PATH, 1000, { ...MCP, authorization: `Bearer ${token}`, host: 'evil.example' }), 403],
      [postHead('/v1/nothing-here', 1000, MCP), 404],
    ] as const) {
      const c = await hold(small.url, head, '127.0.0.5');
      // No body byte was sent: the answer and the end of the connection come anyway.
      expect(await closedWithin([c], 15_000)).toBe(0);
      expect(c.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(c.received().toLowerCase()).toContain('connection: close');
    }
  });

  it('over its budget a new body is refused with 503 and Retry-After and closed; bodiless requests and open streams go on', async () => {
    const stream = await hold(
      small.url,
      `GET ${PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nauthorization: Bearer ${token}\r\n\r\n`,
      '127.0.0.6',
    );
    await expect.poll(() => stream.received(), { timeout: 15_000 }).toContain(': open');
    // Each address may hold a quarter of the budget (1 MiB here): four holders from four addresses spend it.
    const holders: HeldConnection[] = [];
    for (const from of ['127.0.0.7', '127.0.0.8', '127.0.0.9', '127.0.0.10']) {
      const h = await hold(small.url, postHead(PATH, 2 * MiB, { ...MCP, authorization: `Bearer ${token}` }), from);
      await sendBody(h, 256 * 1024 - 1024);
      holders.push(h);
    }
    await new Promise((r) => setTimeout(r, 500));
    const over = await hold(
      small.url,
      postHead(PATH, 64 * 1024, { ...MCP, authorization: `Bearer ${token}` }),
      '127.0.0.11',
    );
    await sendBody(over, 64 * 1024);
    expect(await closedWithin([over], 15_000)).toBe(0);
    expect(over.received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(over.received().toLowerCase()).toMatch(/retry-after: \d+/);
    expect(over.received()).toContain('"code":"unavailable"');
    // Not degraded: health, and the open stream.
    expect((await fetch(`${small.url}/healthz`)).status).toBe(200);
    expect(stream.isClosed()).toBe(false);
    expect(await metric(small.internalUrl, 'mcpx_inbound_refused_total', 'reason="budget"')).toBeGreaterThanOrEqual(1);
    for (const h of holders) h.socket.destroy();
    stream.socket.destroy();
    // Given back: a body goes through again.
    await expect
      .poll(async () => (await legitInitialize(small, '127.0.0.12')).slice(0, 12), { timeout: 15_000 })
      .toBe('HTTP/1.1 200');
  });

  it('caps the open sockets of one address; another address still gets in', async () => {
    const held: HeldConnection[] = [];
    for (let i = 0; i < 20; i++) held.push(await hold(small.url, '', '127.0.0.20'));
    const capped = await hold(small.url, `GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`, '127.0.0.20');
    expect(await closedWithin([capped], 15_000)).toBe(0);
    expect(capped.received()).toMatch(/^HTTP\/1\.1 503 /);
    expect(capped.received()).toContain('too many open connections');
    expect(await legitInitialize(small, '127.0.0.21')).toMatch(/^HTTP\/1\.1 200 /);
    expect(
      await metric(small.internalUrl, 'mcpx_inbound_refused_total', 'reason="connections"'),
    ).toBeGreaterThanOrEqual(1);
    for (const h of held) h.socket.destroy();
  });
});
