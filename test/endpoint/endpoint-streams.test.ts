import { request as httpRequest } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEndpointConfig, startEndpoint } from '@mcpx/endpoint';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { MODERN_VERSION } from './raw-mcp.js';

const PER_TOKEN = 3;
const PER_ACCOUNT = 5;

interface OpenStream {
  status: number;
  body: string;
  retryAfter: string | null;
  /** Resolves when the server ends the stream (or the test aborts it), with what was read. */
  ended: Promise<string>;
  abort(): void;
}

/** Opens a notification stream and keeps reading it; a refusal is read whole. */
async function open(url: string, token: string, kind: 'legacy' | 'listen'): Promise<OpenStream> {
  const ctl = new AbortController();
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    accept: 'application/json, text/event-stream',
  };
  const init: RequestInit =
    kind === 'legacy'
      ? { method: 'GET', headers: { ...headers, accept: 'text/event-stream' }, signal: ctl.signal }
      : {
          method: 'POST',
          signal: ctl.signal,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'mcp-protocol-version': MODERN_VERSION,
            'mcp-method': 'subscriptions/listen',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'subscriptions/listen',
            params: {
              notifications: { toolsListChanged: true },
              _meta: {
                'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
                'io.modelcontextprotocol/clientCapabilities': {},
                'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
              },
            },
          }),
        };
  const res = await fetch(url, init);
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream'))
    return {
      status: res.status,
      body: await res.text(),
      retryAfter: res.headers.get('retry-after'),
      ended: Promise.resolve(''),
      abort: () => ctl.abort(),
    };
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  const ended = (async () => {
    let text = '';
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) return text;
      text += dec.decode(chunk.value);
    }
  })();
  return { status: res.status, body: '', retryAfter: null, ended, abort: () => ctl.abort() };
}

/** A statement on the system's database, as an operator would run it. */
async function sql(sys: EndpointSystem, text: string, values: unknown[]): Promise<void> {
  const client = new pg.Client({ connectionString: sys.system.db.url });
  await client.connect();
  try {
    await client.query(text, values);
  } finally {
    await client.end();
  }
}

/** Whether `p` settled within `ms` (a bounded wait, not a timing assertion). */
async function settled(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const result = await Promise.race([p.then(() => true as const), late]);
  clearTimeout(timer);
  return result;
}

/**
 * One party taking the notification streams everyone shares, as an attack on the running
 * endpoint: streams (2025 GET and 2026-07-28 listen together) are capped per token and per
 * account on each instance, refused with 429 and Retry-After naming the limit while another token
 * and another account still get theirs; a revoked or expired token's open streams end within
 * seconds; a Host with userinfo is a 400 naming `host`, not a 500.
 */
describe('the agent MCP endpoint: notification streams per party', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let other: { api: ApiClient; token: string };
  const streams: OpenStream[] = [];
  const keep = (s: OpenStream): OpenStream => (streams.push(s), s);

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem({
        endpointEnv: {
          ENDPOINT_STREAMS_PER_TOKEN: String(PER_TOKEN),
          ENDPOINT_STREAMS_PER_ACCOUNT: String(PER_ACCOUNT),
        },
      }),
      startTestMcpServer({ era: 'modern' }),
    ]);
    await sys.system.setServer('demo', upstream.url);
    await sys.system.createAgent('one', ['demo'], 1);
    const api = new ApiClient(sys.system.api.apiUrl);
    await api.act('CreateAgent', { name: 'one', definition: { mcpServers: [] } });
    const { token } = await api.act<{ token: string }>('CreateAgentToken', { agent: 'one' });
    other = { api, token };
  }, 120_000);

  afterAll(async () => {
    for (const s of streams) s.abort();
    await sys?.stop();
    await upstream?.close();
  });

  it('refuses a token past its streams with 429 naming the limit, while another token and another account get theirs', async () => {
    const { token } = await sys.token('one');
    for (let i = 0; i < PER_TOKEN; i++)
      expect(keep(await open(sys.urlOf('one'), token, i % 2 === 0 ? 'legacy' : 'listen')).status).toBe(200);
    for (const kind of ['legacy', 'listen'] as const) {
      const refused = keep(await open(sys.urlOf('one'), token, kind));
      expect(refused.status).toBe(429);
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(refused.body).error.data).toMatchObject({
        code: 'rate_limited',
        details: { field: 'authorization', limit: 'streams_per_token', max: PER_TOKEN },
      });
      expect(refused.body).not.toContain(token);
    }
    // Another token of the same account, and another account, still get a stream.
    const { token: second } = await sys.token('one');
    expect(keep(await open(sys.urlOf('one'), second, 'legacy')).status).toBe(200);
    expect(keep(await open(`${sys.endpoint.url}/v1/agents/one/mcp`, other.token, 'listen')).status).toBe(200);

    // The account's bound: a third token of the account is refused once the account holds its streams.
    expect(keep(await open(sys.urlOf('one'), second, 'listen')).status).toBe(200);
    const { token: third } = await sys.token('one');
    const full = keep(await open(sys.urlOf('one'), third, 'legacy'));
    expect(full.status).toBe(429);
    expect(JSON.parse(full.body).error.data.details).toMatchObject({ limit: 'streams_per_account', max: PER_ACCOUNT });
    expect(keep(await open(`${sys.endpoint.url}/v1/agents/one/mcp`, other.token, 'legacy')).status).toBe(200);

    // A stream closed by its client frees its slot.
    const first = streams.find((s) => s.status === 200) as OpenStream;
    first.abort();
    await eventually(
      async () => {
        const s = await open(sys.urlOf('one'), third, 'legacy');
        if (s.status !== 200) return undefined;
        return keep(s);
      },
      15_000,
      'a slot freed by a closed stream',
    );

    const metrics = await (await fetch(`${sys.endpoint.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/mcpx_endpoint_requests_total\{[^}]*outcome="streams_per_token"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/mcpx_endpoint_requests_total\{[^}]*outcome="streams_per_account"[^}]*\} [1-9]/);
  }, 60_000);

  it("ends a token's open streams within seconds of its revocation, on every instance, and those of another token not", async () => {
    const api = new ApiClient(sys.system.api.apiUrl);
    await api.act('CreateAgent', { name: 'one', definition: { mcpServers: [] } });
    const revoked = await api.act<{ token: string; id: string }>('CreateAgentToken', { agent: 'one' });
    const kept = await api.act<{ token: string; id: string }>('CreateAgentToken', { agent: 'one' });
    const second = await startEndpoint(
      loadEndpointConfig({ ...sys.system.env, HTTP_PORT: '0', INSTANCE_ID: 'endpoint-streams-2' }),
      { telemetry: sys.system.telemetry, logSink: () => {} },
    );
    try {
      const url = `${sys.endpoint.url}/v1/agents/one/mcp`;
      const legacy = keep(await open(url, revoked.token, 'legacy'));
      const listen = keep(await open(url, revoked.token, 'listen'));
      const elsewhere = keep(await open(`${second.url}/v1/agents/one/mcp`, revoked.token, 'legacy'));
      const survivor = keep(await open(url, kept.token, 'legacy'));
      expect([legacy.status, listen.status, elsewhere.status, survivor.status]).toEqual([200, 200, 200, 200]);
      expect(await settled(legacy.ended, 500)).toBe(false);

      await api.act('RevokeAgentToken', { id: revoked.id });
      expect(await settled(Promise.all([legacy.ended, listen.ended, elsewhere.ended]), 10_000)).toBe(true);
      expect(await legacy.ended).toContain(': token revoked');
      expect(await settled(survivor.ended, 500)).toBe(false);
      // The revoked token opens no new one.
      expect((await open(url, revoked.token, 'legacy')).status).toBe(401);
    } finally {
      await second.stop();
    }
  }, 60_000);

  it("ends a token's open stream when it expires", async () => {
    const api = new ApiClient(sys.system.api.apiUrl);
    await api.act('CreateAgent', { name: 'one', definition: { mcpServers: [] } });
    const short = await api.act<{ token: string; id: string }>('CreateAgentToken', { agent: 'one' });
    // Tokens expire in whole days: the row is moved to expire in three seconds, before any use.
    await sql(sys, `update registry.agent_tokens set expires_at = now() + interval '3 seconds' where id = $1`, [
      short.id,
    ]);
    const stream = keep(await open(`${sys.endpoint.url}/v1/agents/one/mcp`, short.token, 'listen'));
    expect(stream.status).toBe(200);
    expect(await settled(stream.ended, 15_000)).toBe(true);
    expect(await stream.ended).toContain(': token expired');
  }, 60_000);

  it('ends the stream of a token whose row goes without a notice (deleted by hand) at the next recheck', async () => {
    const api = new ApiClient(sys.system.api.apiUrl);
    await api.act('CreateAgent', { name: 'one', definition: { mcpServers: [] } });
    const gone = await api.act<{ token: string; id: string }>('CreateAgentToken', { agent: 'one' });
    const stays = await api.act<{ token: string }>('CreateAgentToken', { agent: 'one' });
    const url = `${sys.endpoint.url}/v1/agents/one/mcp`;
    const stream = keep(await open(url, gone.token, 'legacy'));
    const other = keep(await open(url, stays.token, 'listen'));
    expect([stream.status, other.status]).toEqual([200, 200]);
    await sql(sys, 'delete from registry.agent_tokens where id = $1', [gone.id]);
    // The tokens of open streams are read again every 15 s: bounded at twice that and a margin.
    expect(await settled(stream.ended, 40_000)).toBe(true);
    expect(await settled(other.ended, 100)).toBe(false);
  }, 60_000);

  it('answers a Host with userinfo with 400 naming host, not 500', async () => {
    const { token } = await sys.token('one');
    const port = new URL(sys.endpoint.url).port;
    for (const host of [`user@127.0.0.1:${port}`, `user:pw@localhost`, '127.0.0.1/x', 'a b']) {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            path: '/v1/agents/one/mcp',
            method: 'POST',
            headers: {
              host,
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
            },
          },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
      });
      expect(answer.status, host).toBe(400);
      expect(JSON.parse(answer.body).error.data).toEqual({ code: 'invalid_input', details: { field: 'host' } });
      expect(answer.body).not.toContain('user');
    }
  });
});
