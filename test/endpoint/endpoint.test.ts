import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { listAllTools } from '../support/fixtures/mcp-lists.js';
import { legacyHeaders } from '../support/fixtures/legacy-raw-client.js';

/**
 * server-everything's tools as the connector sees them: 16, the 13 any client gets and the three it
 * shows to a client that declares elicitation and sampling (CONNECTOR_CAPABILITIES), the same to
 * discovery and to the proxy, so the count never flips between their listings.
 */
const EVERYTHING_TOOLS = 16;
/** A small page, so that every list below pages. */
const PAGE = 5;

describe('the agent MCP endpoint: both eras through the proxy', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TestMcpServer;
  let agentId: string;
  let token: string;

  beforeAll(async () => {
    [sys, everything, modern] = await Promise.all([
      startEndpointSystem({ endpointEnv: { ENDPOINT_PAGE_SIZE: String(PAGE) } }),
      startEverythingServer('streamableHttp'),
      startTestMcpServer({ era: 'modern' }),
    ]);
    await sys.system.setServer('everything', everything.url);
    await sys.system.setServer('demo', modern.url);
    agentId = await sys.system.createAgent('helper', ['everything', 'demo'], EVERYTHING_TOOLS + 2);
    ({ token } = await sys.token('helper'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  it('serves an SDK v2 client (2026-07-28): tools/list and tools/call of server-everything', async () => {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf(agentId)), { requestInit: { headers: auth() } }),
    );
    try {
      const tools = await listAllTools(client);
      const names: string[] = tools.map((t) => t.name);
      expect(names.filter((n) => n.startsWith('everything__')).length).toBe(EVERYTHING_TOOLS);
      expect(names).toEqual([...names].sort());
      expect(names).toContain('demo__echo');
      const echo = tools.find((t) => t.name === 'everything__echo');
      expect(new Set(names).size).toBe(names.length);
      expect(echo?.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
      expect(echo?._meta).toMatchObject({ 'io.mcpx/permission': 'act', 'io.mcpx/server': 'everything' });
      const out = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello' } });
      expect(out.isError).toBeFalsy();
      expect(out.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
      const demo = await client.callTool({ name: 'demo__echo', arguments: { text: 'modern' } });
      expect(JSON.stringify(demo.content)).toContain('modern');
    } finally {
      await client.close();
    }
  });

  it('serves an SDK v1 client (2025-11-25, stateless legacy): tools/list and tools/call', async () => {
    const client = new V1Client({ name: 'v1-test', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(sys.urlOf('helper')), { requestInit: { headers: auth() } }));
    try {
      const tools = await listAllTools(client);
      expect(tools.filter((t) => t.name.startsWith('everything__')).length).toBe(EVERYTHING_TOOLS);
      const out = await client.callTool({ name: 'everything__echo', arguments: { message: 'legacy' } });
      expect(out.content).toEqual([{ type: 'text', text: 'Echo: legacy' }]);
    } finally {
      await client.close();
    }
  });

  it('answers a refused call as a tool result with isError and the connector code, and an unlisted tool as invalid params', async () => {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf(agentId)), { requestInit: { headers: auth() } }),
    );
    try {
      const bad = await client.callTool({ name: 'everything__echo', arguments: { message: 42 } });
      expect(bad.isError).toBe(true);
      const text = (bad.content as Array<{ text: string }>)[0]!.text;
      expect(text).toMatch(/^invalid_arguments: /);
      expect(text).toContain('input schema');
      expect((bad._meta as Record<string, { code: string }>)['io.mcpx/error']!.code).toBe('invalid_arguments');
      await expect(client.callTool({ name: 'nobody__tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
    } finally {
      await client.close();
    }
  });

  it('pages tools/list deterministically with ttlMs and a private cache scope', async () => {
    const page = async (cursor?: string): Promise<any> => {
      const res = await fetch(sys.urlOf(agentId), {
        method: 'POST',
        headers: legacyHeaders(token),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/list',
          params: cursor === undefined ? {} : { cursor },
        }),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      const json = text.startsWith('{') ? JSON.parse(text) : JSON.parse(/data: (.*)/.exec(text)![1]!);
      return json.result;
    };
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const result = await page(cursor);
      expect(result.ttlMs).toBeGreaterThan(0);
      expect(result.cacheScope).toBe('private');
      expect(result.tools.length).toBeLessThanOrEqual(PAGE);
      names.push(...result.tools.map((t: { name: string }) => t.name));
      cursor = result.nextCursor;
      pages++;
    } while (cursor !== undefined && pages < 50);
    expect(pages).toBeGreaterThan(2);
    expect(names).toEqual([...names].sort());
    expect(new Set(names).size).toBe(names.length);
    // The same pages again: the order is deterministic.
    expect((await page()).tools.map((t: { name: string }) => t.name)).toEqual(names.slice(0, PAGE));
    // A cursor that is not one of ours is invalid params, not a crash.
    const res = await fetch(sys.urlOf(agentId), {
      method: 'POST',
      headers: legacyHeaders(token),
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: '!!not-ours' } }),
    });
    const body = await res.text();
    expect(body).toContain('-32602');
  });
});
