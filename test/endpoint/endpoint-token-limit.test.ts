import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEndpointConfig } from '@mcpx/endpoint';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};
const FORGED = `Bearer mcpx_at_${'A'.repeat(43)}`;
const BURST = 3;

/**
 * Guessing tokens, as an attack against the running endpoint: failed attempts per client address
 * are limited (three at once here, then one every five seconds, so that a loaded machine still sends the burst faster than it refills), past that the address gets 429
 * with Retry-After before any token is looked at (its right token too, so a guess says nothing),
 * other addresses are untouched, a forged X-Forwarded-For does not move the attacker, and a
 * request without a token is not an attempt. The loopback peer is a trusted proxy, so each test
 * address comes in X-Forwarded-For as a load balancer would send it.
 */
describe('the agent MCP endpoint: failed token attempts per address', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem({
        endpointEnv: {
          TRUSTED_PROXIES: '127.0.0.1',
          ENDPOINT_TOKEN_FAILURES_PER_ADDRESS: '0.2',
          ENDPOINT_TOKEN_FAILURES_PER_ADDRESS_BURST: String(BURST),
        },
      }),
      startTestMcpServer({ era: 'modern' }),
    ]);
    await sys.system.setServer('demo', upstream.url);
    await sys.system.createAgent('one', ['demo'], 1);
    await sys.system.createAgent('two', ['demo'], 1);
    ({ token } = await sys.token('one'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const post = (from: string, authorization: string | undefined, agent = 'one'): Promise<Response> =>
    fetch(sys.urlOf(agent), {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'x-forwarded-for': from, ...(authorization !== undefined ? { authorization } : {}) },
      body: LIST,
    });

  it('refuses an address past its failed attempts with 429 and Retry-After, its right token too, until the bucket refills', async () => {
    const attacker = '198.51.100.7';
    for (let i = 0; i < BURST; i++) expect((await post(attacker, FORGED)).status).toBe(401);
    const limited = await post(attacker, FORGED);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    const body = (await limited.json()) as {
      error: { code: number; message: string; data: { code: string; details: Record<string, unknown> } };
    };
    expect(body.error.data).toMatchObject({
      code: 'rate_limited',
      details: { field: 'authorization', limit: 'token_failures_per_address' },
    });
    expect(typeof body.error.data.details.retryAfterMs).toBe('number');
    expect(JSON.stringify(body)).not.toContain('AAAA');

    // Blocked: the right token is not even looked at, so a lucky guess would look the same.
    const right = await post(attacker, `Bearer ${token}`);
    expect(right.status).toBe(429);
    expect(await right.text()).not.toContain(token);
    // A token of the wrong agent and a malformed one are attempts too (and refused the same way).
    expect((await post(attacker, `Bearer ${token}`, 'two')).status).toBe(429);
    expect((await post(attacker, 'Bearer nope')).status).toBe(429);
    // What the attacker writes left of the trusted proxy's entry does not make it someone else.
    expect((await post(`10.9.9.9, ${attacker}`, `Bearer ${token}`)).status).toBe(429);

    // Another address is untouched: its right token works, its wrong one is a plain 401.
    expect((await post('198.51.100.8', `Bearer ${token}`)).status).toBe(200);
    expect((await post('198.51.100.8', FORGED)).status).toBe(401);

    // Once the bucket has refilled, the attacker's address may try again (and its right token works).
    await eventually(
      async () => ((await post(attacker, `Bearer ${token}`)).status === 200 ? true : undefined),
      30_000,
      'the address admitted again after Retry-After',
    );
  }, 60_000);

  it('does not count a request without a token, or one that passes, as a failed attempt', async () => {
    const client = '198.51.100.9';
    for (let i = 0; i < BURST * 3; i++) expect((await post(client, undefined)).status).toBe(401);
    for (let i = 0; i < BURST * 3; i++) expect((await post(client, `Bearer ${token}`)).status).toBe(200);
    expect((await post(client, FORGED)).status).toBe(401);
  });

  it('counts the refusals by reason, never a token or an address', async () => {
    const metrics = await (await fetch(`${sys.endpoint.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_endpoint_requests_total\{[^}]*outcome="token_failures_limited"[^}]*\} [1-9]/);
    expect(metrics).not.toContain('198.51.100.7');
    expect(metrics).not.toContain(token);
  });

  it('refuses a malformed TRUSTED_PROXIES or limit at start, naming the setting', () => {
    expect(() => loadEndpointConfig({ TRUSTED_PROXIES: '10.0.0.0/99' })).toThrow(/TRUSTED_PROXIES/);
    expect(() => loadEndpointConfig({ ENDPOINT_TOKEN_FAILURES_PER_ADDRESS: '-1' })).toThrow(
      /ENDPOINT_TOKEN_FAILURES_PER_ADDRESS/,
    );
    expect(() => loadEndpointConfig({ ENDPOINT_TOKEN_FAILURES_PER_ADDRESS_BURST: '0' })).toThrow(
      /ENDPOINT_TOKEN_FAILURES_PER_ADDRESS_BURST/,
    );
  });
});
