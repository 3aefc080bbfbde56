import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { WireError } from '@mcpx/contracts';
import { ApiClient } from '../support/api-client.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/** A POST with exactly these headers (Host included), over node:http. */
function rawPost(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(LIST);
  });
}

const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};

/**
 * The endpoint's defences as attacks against the running system: tokens (missing, forged, another
 * agent's, revoked, expired, another account's agent), DNS rebinding (Host, Origin), CORS only for
 * the configured origin, and the token management actions (OWNER only, shown once, never listed).
 */
describe('the agent MCP endpoint: tokens, DNS rebinding, CORS', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let token: string;
  let tokenId: string;
  const CORS_ORIGIN = 'https://console.example.com';

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem({ endpointEnv: { ENDPOINT_CORS_ORIGINS: CORS_ORIGIN } }),
      startTestMcpServer({ era: 'modern' }),
    ]);
    await sys.system.setServer('demo', upstream.url);
    await sys.system.createAgent('one', ['demo'], 1);
    await sys.system.createAgent('two', ['demo'], 1);
    ({ token, id: tokenId } = await sys.token('one', { name: 'laptop' }));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const post = (path: string, headers: Record<string, string>): Promise<Response> =>
    fetch(path, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: LIST });

  it('issues a token shown once, lists it without the token or its hash, OWNER only', async () => {
    const created = await sys.token('one', { name: 'ci', expiresInDays: 30 });
    expect(created.token).toMatch(/^mcpx_at_[A-Za-z0-9_-]{43}$/);
    const listed = await sys.system.api.act<{ tokens: Array<Record<string, unknown>> }>('ListAgentTokens', {
      agent: 'one',
    });
    const row = listed.tokens.find((t) => t.id === created.id);
    expect(row).toMatchObject({ name: 'ci', agent: 'one', state: 'active', revokedAt: null });
    expect(typeof row?.expiresAt).toBe('string');
    expect(JSON.stringify(listed)).not.toContain(created.token);
    expect(JSON.stringify(listed)).not.toMatch(/[0-9a-f]{64}/);
    // Bad input: a typed error naming the field, nothing written.
    await expect(sys.token('one', { expiresInDays: -1 })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'expiresInDays' },
    });
    await expect(sys.token('one', { name: 'x'.repeat(65) })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'name' },
    });
    await expect(sys.token('nobody')).rejects.toMatchObject({ code: 'not_found', details: { field: 'agent' } });
    await expect(sys.system.api.act('RevokeAgentToken', { id: 'at_000000000000000000' })).rejects.toMatchObject({
      code: 'not_found',
    });
    // A WRITER signer may not hand out tokens.
    const writer = new ApiClient(sys.system.api.apiUrl, undefined, sys.system.account);
    await sys.system.api.act('AuthorizeSigner', { principal: writer.key.principal, role: 'WRITER' });
    const refused = await writer.act('CreateAgentToken', { agent: 'one' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WireError);
    expect((refused as WireError).code).toBe('forbidden');
    await sys.system.api.act('RevokeAgentToken', { id: created.id });
  });

  it('refuses a missing, malformed, forged or other agent’s token with 401 and a Bearer challenge', async () => {
    const url = sys.urlOf('one');
    const missing = await post(url, {});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    for (const bad of [
      'Bearer nope',
      `Bearer mcpx_at_${'A'.repeat(43)}`,
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      `Bearer ${token}x`,
    ]) {
      const res = await post(url, { authorization: bad });
      expect(res.status, bad).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('invalid_token');
      expect(await res.text()).not.toContain(token);
    }
    // The token of agent one does not open agent two, by name or by id.
    expect((await post(sys.urlOf('two'), { authorization: `Bearer ${token}` })).status).toBe(401);
    expect((await post(sys.urlOf(sys.system.agentId('two')), { authorization: `Bearer ${token}` })).status).toBe(401);
    // By name and by id, agent one's own endpoint answers.
    expect((await post(url, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await post(sys.urlOf(sys.system.agentId('one')), { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('refuses a revoked token at once, even one a connected client is using', async () => {
    const { token: t, id } = await sys.token('one', { name: 'soon revoked' });
    const client = new Client({ name: 'revoked', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('one')), {
        requestInit: { headers: { authorization: `Bearer ${t}` } },
      }),
    );
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      const revoked = await sys.system.api.act<{ revoked: boolean }>('RevokeAgentToken', { id });
      expect(revoked.revoked).toBe(true);
      // The revocation notice may take a moment to arrive; it must arrive well within the cache's minute.
      await eventually(
        async () =>
          (await post(sys.urlOf('one'), { authorization: `Bearer ${t}` })).status === 401 ? true : undefined,
        5_000,
        'revoked token refused',
      );
      // (tools/list may be answered from the client's cache for its ttlMs; a call never is.)
      await expect(client.callTool({ name: 'demo__echo', arguments: { text: 'x' } })).rejects.toThrow();
      const listed = await sys.system.api.act<{ tokens: Array<{ id: string; state: string }> }>('ListAgentTokens', {
        agent: 'one',
      });
      expect(listed.tokens.find((x) => x.id === id)?.state).toBe('revoked');
      expect((await sys.system.api.act<{ revoked: boolean }>('RevokeAgentToken', { id })).revoked).toBe(false);
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('refuses an expired token', async () => {
    const { token: t, id } = await sys.token('one', { name: 'short', expiresInDays: 1 / 86_400 });
    await eventually(
      async () => ((await post(sys.urlOf('one'), { authorization: `Bearer ${t}` })).status === 401 ? true : undefined),
      10_000,
      'expired token refused',
    );
    const listed = await sys.system.api.act<{ tokens: Array<{ id: string; state: string }> }>('ListAgentTokens', {
      agent: 'one',
    });
    expect(listed.tokens.find((x) => x.id === id)?.state).toBe('expired');
  });

  it('refuses a token of another account for an agent of the same name', async () => {
    const other = new ApiClient(sys.system.api.apiUrl);
    await other.act('CreateAgent', { name: 'one', definition: { mcpServers: [] } });
    const theirs = await other.act<{ token: string }>('CreateAgentToken', { agent: 'one' });
    // Their token opens their agent "one", whose tool set is empty; never ours.
    const res = await post(sys.urlOf(sys.system.agentId('one')), { authorization: `Bearer ${theirs.token}` });
    expect(res.status).toBe(401);
    const own = await post(sys.urlOf('one'), { authorization: `Bearer ${theirs.token}` });
    expect(own.status).toBe(200);
    expect(await own.text()).not.toContain('demo__');
  });

  it('refuses a foreign Host or Origin (DNS rebinding) before the token is looked at', async () => {
    const url = sys.urlOf('one');
    const port = new URL(url).port;
    // fetch sets Host itself: a raw request says what a rebinding browser would.
    const host = await rawPost(url, { ...MCP_HEADERS, host: `evil.example:${port}`, authorization: `Bearer ${token}` });
    expect(host.status).toBe(403);
    expect(host.body).not.toContain(token);
    expect(
      (await rawPost(url, { ...MCP_HEADERS, host: `127.0.0.1:${port}`, authorization: `Bearer ${token}` })).status,
    ).toBe(200);
    const origin = await post(url, { origin: 'http://evil.example', authorization: `Bearer ${token}` });
    expect(origin.status).toBe(403);
    const nullOrigin = await post(url, { origin: 'null', authorization: `Bearer ${token}` });
    expect(nullOrigin.status).toBe(403);
    const local = await post(url, { origin: `http://localhost:${port}`, authorization: `Bearer ${token}` });
    expect(local.status).toBe(200);
    expect(local.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('sends CORS headers only to the configured origin', async () => {
    const url = sys.urlOf('one');
    const pre = await fetch(url, {
      method: 'OPTIONS',
      headers: {
        origin: CORS_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(CORS_ORIGIN);
    expect(pre.headers.get('access-control-allow-headers')).toContain('authorization');
    const ok = await post(url, { origin: CORS_ORIGIN, authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(CORS_ORIGIN);
    const other = await fetch(url, {
      method: 'OPTIONS',
      headers: { origin: 'https://other.example.com', 'access-control-request-method': 'POST' },
    });
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('guards the legacy notification stream and bounds the body', async () => {
    const url = sys.urlOf('one');
    const sse = { accept: 'text/event-stream' };
    expect((await fetch(url, { headers: sse })).status).toBe(401);
    expect((await fetch(sys.urlOf('two'), { headers: { ...sse, authorization: `Bearer ${token}` } })).status).toBe(401);
    const ok = new AbortController();
    const open = await fetch(url, { headers: { ...sse, authorization: `Bearer ${token}` }, signal: ok.signal });
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toContain('text/event-stream');
    ok.abort();
    // A body over the bound is refused before it is parsed; the endpoint goes on serving.
    const huge = await fetch(url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: 'x'.repeat(5 * 1024 * 1024),
    });
    expect(huge.status).toBe(413);
    const garbage = await fetch(url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: '{"jsonrpc":',
    });
    expect(garbage.status).toBeGreaterThanOrEqual(400);
    expect(garbage.status).toBeLessThan(500);
    const badPath = await post(`${sys.endpoint.url}/v1/agents/%E0%A4%A/mcp`, { authorization: `Bearer ${token}` });
    expect(badPath.status).toBe(400);
    expect(await badPath.json()).toMatchObject({ error: { code: 'invalid_input', details: { field: 'agent' } } });
    expect((await post(url, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('keeps the first token working through all of this', async () => {
    expect((await post(sys.urlOf('one'), { authorization: `Bearer ${token}` })).status).toBe(200);
    const listed = await sys.system.api.act<{ tokens: Array<{ id: string; state: string }> }>('ListAgentTokens', {
      agent: 'one',
    });
    expect(listed.tokens.find((x) => x.id === tokenId)?.state).toBe('active');
  });
});
