import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { serveV1Sessions } from '../servers/v1-sessions.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * A 2025-11-25 server (SDK v1, sessions) whose resources are its session's own: each session lists
 * one resource naming it, and says the list may be kept a minute (`ttlMs`, which a 2025 result
 * may carry unasked). The proxy keeps one session per run, and a run is one endpoint token's.
 */
async function startSessionScopedServer(): Promise<{ url: string; lists: () => number; close: () => Promise<void> }> {
  let lists = 0;
  const newServer = (sessionOf: () => string | undefined): Server => {
    const server = new Server(
      { name: 'session-scoped', version: '0.1.0' },
      { capabilities: { tools: {}, resources: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'noop', description: 'Does nothing', inputSchema: { type: 'object', properties: {} } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ok' }] }));
    server.setRequestHandler(ListResourcesRequestSchema, () => {
      lists++;
      const session = sessionOf() ?? 'none';
      return {
        resources: [{ uri: `test://session/${session}`, name: `the private notes of session ${session}` }],
        ttlMs: 60_000,
        cacheScope: 'private',
      };
    });
    return server;
  };
  const served = await serveV1Sessions(newServer);
  return { url: served.url, lists: () => lists, close: () => served.close() };
}

/**
 * The relay cache (docs/endpoint.md "Cached") keeps a result per account, server and credentials:
 * the context a modern (sessionless) server sees. A 2025 server is reached on a session per run,
 * one per endpoint token, which is narrower: what such a session says is its own, and one token's
 * listing must never be served to another token, whatever `ttlMs` the result carries.
 */
describe('relay cache and a 2025 server’s sessions', () => {
  let sys: EndpointSystem;
  let upstream: Awaited<ReturnType<typeof startSessionScopedServer>>;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([startEndpointSystem(), startSessionScopedServer()]);
    await sys.system.setServer('notes', upstream.url);
    await sys.system.createAgent('reader', ['notes'], 1);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const client = async (token: string): Promise<Client> => {
    const c = new Client({ name: 'cache-scope', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${sys.endpoint.url}/v1/agents/reader/servers/notes/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    return c;
  };

  it('attack: a second token of the same agent does not get the first token’s session-scoped listing', async () => {
    const [{ token: a }, { token: b }] = await Promise.all([sys.token('reader'), sys.token('reader')]);
    const ca = await client(a);
    const cb = await client(b);
    try {
      const first = (await ca.listResources()).resources.map((r) => r.uri);
      expect(first).toHaveLength(1);
      expect(first[0]).toMatch(/^test:\/\/session\/[0-9a-f-]{36}$/);
      const listed = upstream.lists();
      const second = (await cb.listResources()).resources.map((r) => r.uri);
      expect(second).toHaveLength(1);
      // B's own session answered, not A's listing from the cache.
      expect(second[0]).not.toBe(first[0]);
      expect(upstream.lists()).toBe(listed + 1);
    } finally {
      await Promise.all([ca.close(), cb.close()].map((p) => p.catch(() => undefined)));
    }
  });
});
