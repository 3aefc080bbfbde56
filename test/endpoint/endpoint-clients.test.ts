import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMCPClient } from '@ai-sdk/mcp';
import { MCPServerStreamableHttp } from '@openai/agents-core';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { everyBlockTools } from '../servers/content-tools.js';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { EVERY_BLOCK_TYPES, lessConnectorKeys, type Result } from './client-results.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

type ListedTool = { name: string; description?: string; inputSchema: unknown };

/** One MCP client library as its users drive it: list the tools, call one (a connection each, closed after). */
interface Driver {
  list(url: string, headers: Record<string, string>): Promise<ListedTool[]>;
  call(url: string, headers: Record<string, string>, tool: string, args: Record<string, unknown>): Promise<Result>;
}

const require = createRequire(import.meta.url);
const mcpRemoteBin = join(dirname(require.resolve('mcp-remote/package.json')), 'dist', 'proxy.js');

/** Opens a client, runs `fn`, closes it whatever happens. */
async function using<C extends { close(): Promise<unknown> }, T>(
  open: () => Promise<C>,
  fn: (c: C) => Promise<T>,
): Promise<T> {
  const c = await open();
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

const sdkV2 = (): Promise<Client> =>
  Promise.resolve(new Client({ name: 'matrix-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } }));

/**
 * `mcp-remote` (a stdio bridge that desktop clients run) on this process's Node, driven over stdio
 * by an SDK v1 client; headers in a file (`--header-file`), as its README advises for credentials.
 */
async function mcpRemote(url: string, headers: Record<string, string>): Promise<V1Client> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpx-mcp-remote-'));
  const file = join(dir, 'headers.txt');
  writeFileSync(
    file,
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  const client = new V1Client({ name: 'matrix-mcp-remote', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      mcpRemoteBin,
      url,
      '--transport',
      'http-only',
      ...(Object.keys(headers).length > 0 ? ['--header-file', file] : []),
    ],
    env: { ...(process.env as Record<string, string>), MCP_REMOTE_CONFIG_DIR: dir },
    stderr: 'ignore',
  });
  transport.onclose = () => rmSync(dir, { recursive: true, force: true });
  await client.connect(transport);
  return client;
}

const DRIVERS: Record<string, Driver> = {
  'SDK v2 client (@modelcontextprotocol/client)': {
    list: (url, headers) =>
      using(sdkV2, async (c) => {
        await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
        return (await c.listTools()).tools;
      }),
    call: (url, headers, tool, args) =>
      using(sdkV2, async (c) => {
        await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
        return await c.callTool({ name: tool, arguments: args });
      }),
  },
  'SDK v1 client (@modelcontextprotocol/sdk)': {
    list: (url, headers) =>
      using(
        async () => new V1Client({ name: 'matrix-v1', version: '1.0.0' }),
        async (c) => {
          await c.connect(new V1Transport(new URL(url), { requestInit: { headers } }));
          return (await c.listTools()).tools;
        },
      ),
    call: (url, headers, tool, args) =>
      using(
        async () => new V1Client({ name: 'matrix-v1', version: '1.0.0' }),
        async (c) => {
          await c.connect(new V1Transport(new URL(url), { requestInit: { headers } }));
          return await c.request(
            { method: 'tools/call', params: { name: tool, arguments: args } },
            CallToolResultSchema,
          );
        },
      ),
  },
  'OpenAI Agents SDK (@openai/agents-core MCPServerStreamableHttp)': {
    list: (url, headers) =>
      using(
        async () => {
          const s = new MCPServerStreamableHttp({ url, requestInit: { headers }, name: 'matrix' });
          await s.connect();
          return s;
        },
        async (s) => (await s.listTools()) as ListedTool[],
      ),
    call: (url, headers, tool, args) =>
      using(
        async () => {
          const s = new MCPServerStreamableHttp({ url, requestInit: { headers }, name: 'matrix' });
          await s.connect();
          return s;
        },
        async (s) => (await s.callToolResult(tool, args)) as Result,
      ),
  },
  'Vercel AI SDK (@ai-sdk/mcp createMCPClient)': {
    list: (url, headers) =>
      using(
        () => createMCPClient({ transport: { type: 'http', url, headers } }),
        async (c) => (await c.listTools()).tools as ListedTool[],
      ),
    call: (url, headers, tool, args) =>
      using(
        () => createMCPClient({ transport: { type: 'http', url, headers } }),
        async (c) => (await c.callTool({ name: tool, arguments: args })) as Result,
      ),
  },
  'mcp-remote (stdio bridge)': {
    list: (url, headers) =>
      using(
        () => mcpRemote(url, headers),
        async (c) => (await c.listTools()).tools,
      ),
    call: (url, headers, tool, args) =>
      using(
        () => mcpRemote(url, headers),
        async (c) =>
          (await c.request(
            { method: 'tools/call', params: { name: tool, arguments: args } },
            CallToolResultSchema,
          )) as Result,
      ),
  },
};

/**
 * Real clients of several ecosystems, each against the same upstream directly and through the
 * agent's endpoint: the same tools listed (under `<server>__`, with the same descriptions and
 * schemas), and the same call answered with the same result (every block type in order, with
 * annotations and `_meta`, `structuredContent`), less the connector's own keys.
 */
describe('the agent MCP endpoint: real clients of several ecosystems, direct and through', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let agentId: string;
  let token: string;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem(),
      startTestMcpServer({ era: 'dual', tools: [echoTool(), ...everyBlockTools()] }),
    ]);
    await sys.system.setServer('docs', upstream.url);
    agentId = await sys.system.createAgent('matrix', ['docs'], 3);
    ({ token } = await sys.token('matrix'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  it.each(Object.keys(DRIVERS))(
    '%s lists and calls through the endpoint as it does directly',
    async (which) => {
      const driver = DRIVERS[which] as Driver;
      const auth = { authorization: `Bearer ${token}` };
      const through = sys.urlOf(agentId);

      const [directTools, throughTools] = [await driver.list(upstream.url, {}), await driver.list(through, auth)];
      const shape = (t: ListedTool, prefix = ''): ListedTool => ({
        name: `${prefix}${t.name}`,
        description: t.description,
        inputSchema: t.inputSchema,
      });
      expect(directTools.length).toBe(3);
      expect(throughTools.map((t) => shape(t)).sort((a, b) => a.name.localeCompare(b.name))).toEqual(
        directTools.map((t) => shape(t, 'docs__')).sort((a, b) => a.name.localeCompare(b.name)),
      );

      const directEcho = await driver.call(upstream.url, {}, 'echo', { text: `hi from ${which}` });
      const throughEcho = await driver.call(through, auth, 'docs__echo', { text: `hi from ${which}` });
      expect(throughEcho.content).toEqual(directEcho.content);

      const direct = await driver.call(upstream.url, {}, 'every_block', {});
      expect(direct.content?.map((b) => b.type)).toEqual(EVERY_BLOCK_TYPES);
      const viaEndpoint = await driver.call(through, auth, 'docs__every_block', {});
      expect(lessConnectorKeys(viaEndpoint)).toEqual(lessConnectorKeys(direct));
      // The server's forged connector key is dropped, not passed on.
      expect(
        (viaEndpoint.content?.[2]?._meta as Record<string, unknown> | undefined)?.['io.mcpx/omitted'],
      ).toBeUndefined();
    },
    120_000,
  );
});
