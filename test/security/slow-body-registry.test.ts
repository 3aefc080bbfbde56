import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchPeakRss } from '../servers/hostile-peak-rss.js';
import { ApiClient } from '../support/api-client.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { closedWithin, hold, metric, postHead, sendBody, type HeldConnection } from './slow-body-support.js';

const MiB = 1024 * 1024;
/** The body deadline, shortened for the test (default 10 s). */
const BODY_TIMEOUT_MS = 3_000;
const CONNECTIONS_PER_ADDRESS = 250;

/**
 * Slow-body floods against the registry as its own process: the action API (whose credential is
 * inside the signed body: the address's rate first, then the bounded read) and a GET page with a
 * body; beside them the agent endpoint's OAuth token endpoint (the authorization server's process). Every body is read within a deadline and a per-process
 * budget (an address's quarter of it at most), and one address holds a bounded number of sockets.
 */
describe('the registry under slow-body floods', () => {
  let system: ProcessSystem;
  let api: ApiClient;

  beforeAll(async () => {
    system = await ProcessSystem.start({
      authorizationServer: true,
      projectors: 0,
      proxies: 0,
      // The flood's 200 requests all pass the per-address rate, so each body is read.
      env: {
        REGISTRY_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        AUTHORIZATION_SERVER_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        REGISTRY_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS_PER_ADDRESS),
        RATE_ACTIONS_PER_ADDRESS_BURST: '1000',
      },
    });
    api = new ApiClient(system.apiUrl);
    await api.act('ListMcpServers');
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
  });

  const registry = () => system.services.find((s) => s.name === 'registry')!;

  /** A signed action sent from `from`: the answer as far as its body (or until the registry closed). */
  const legitAction = async (from: string): Promise<string> => {
    const body = JSON.stringify(api.envelope({ type: 'ListMcpServers' }));
    const c = await hold(system.apiUrl, postHead('/v1/actions', Buffer.byteLength(body)) + body, from);
    await eventually(
      async () => (c.isClosed() || c.received().includes('"servers"') ? true : undefined),
      15_000,
      'an answer',
    );
    c.socket.destroy();
    return c.received();
  };

  it('200 stalled action bodies of 1 MiB-1: RSS grows at most 64 MiB, each connection is closed by the deadline or refused, another address is served meanwhile', async () => {
    const peak = watchPeakRss(registry().child.pid!);
    // From one address, 100 send all but one byte: past the address's share of the budget they are refused (503).
    const greedy: HeldConnection[] = [];
    for (let i = 0; i < 100; i++) greedy.push(await hold(system.apiUrl, postHead('/v1/actions', MiB - 1)));
    // From another, 100 send 32 KiB and stall: read until the deadline cuts them (408).
    const slow: HeldConnection[] = [];
    for (let i = 0; i < 100; i++) slow.push(await hold(system.apiUrl, postHead('/v1/actions', MiB - 1), '127.0.0.3'));
    // The OAuth pages: a token request's form (the authorization server's own process) and a GET with a body, both stalled.
    const token = await hold(
      system.authUrl,
      postHead('/v1/oauth-server/token', 16 * 1024 - 1, { 'content-type': 'application/x-www-form-urlencoded' }),
      '127.0.0.4',
    );
    const page = await hold(
      system.apiUrl,
      `GET /v1/oauth/callback?state=x HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 100000\r\n\r\n`,
      '127.0.0.4',
    );
    await Promise.all([
      ...greedy.map((c) => sendBody(c, MiB - 2)),
      ...slow.map((c) => sendBody(c, 32 * 1024)),
      sendBody(token, 1024),
      sendBody(page, 1024),
    ]);
    const legit = await legitAction('127.0.0.2');
    expect(legit).toMatch(/^HTTP\/1\.1 200 /);
    // A bound for a hang, not a time measured: on a service without a body deadline they stay open.
    const all = [...greedy, ...slow, token, page];
    expect(await closedWithin(all, BODY_TIMEOUT_MS + 15_000)).toBe(0);
    console.info(
      `registry flood: peak RSS growth ${peak.growthMiB().toFixed(1)} MiB over ${(peak.baseline / MiB).toFixed(0)} MiB`,
    );
    expect(peak.growthMiB()).toBeLessThanOrEqual(64);
    expect(slow.filter((c) => /^HTTP\/1\.1 408 /.test(c.received())).length).toBe(100);
    expect(slow[0]!.received()).toMatch(/"code":"invalid_input".*"field":"body".*"bound":"bodyTimeoutMs"/);
    const refused = greedy.filter((c) => /^HTTP\/1\.1 503 /.test(c.received()));
    expect(refused.length).toBeGreaterThan(50);
    expect(refused[0]!.received().toLowerCase()).toMatch(/retry-after: \d+/);
    expect(refused[0]!.received()).toContain('"code":"unavailable"');
    expect(token.received()).toMatch(/^HTTP\/1\.1 408 .*"error":"invalid_request"/s);
    expect(page.received()).toMatch(/^HTTP\/1\.1 (408|400) /);
    expect(
      await metric(registry().internalUrl, 'mcpx_inbound_refused_total', 'reason="deadline"'),
    ).toBeGreaterThanOrEqual(100);
    expect(await metric(registry().internalUrl, 'mcpx_inbound_refused_total', 'reason="budget"')).toBeGreaterThan(50);
  });

  it('caps the open sockets of one address; another address still gets in', async () => {
    const held: HeldConnection[] = [];
    for (let i = 0; i < CONNECTIONS_PER_ADDRESS; i++) held.push(await hold(system.apiUrl, '', '127.0.0.9'));
    const capped = await hold(system.apiUrl, `GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`, '127.0.0.9');
    expect(await closedWithin([capped], 15_000)).toBe(0);
    expect(capped.received()).toMatch(/^HTTP\/1\.1 503 .*too many open connections/s);
    expect(await legitAction('127.0.0.10')).toMatch(/^HTTP\/1\.1 200 /);
    expect(
      await metric(registry().internalUrl, 'mcpx_inbound_refused_total', 'reason="connections"'),
    ).toBeGreaterThanOrEqual(1);
    for (const h of held) h.socket.destroy();
  });
});
