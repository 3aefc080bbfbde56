import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/** Tools of the large server: 120 numbered ones and one that a search should find first. */
const NUMBERED = 120;
const bigTools = (): TestTool[] => [
  ...Array.from({ length: NUMBERED }, (_, i) => ({
    name: `op_${String(i).padStart(3, '0')}`,
    description: `Numbered operation ${i} of the inventory`,
    inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
    handler: () => ({ content: [{ type: 'text' as const, text: `op ${i}` }] }),
  })),
  {
    name: 'weather_forecast',
    description: 'Gives the weather forecast for a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    annotations: { readOnlyHint: true },
    handler: (args) => ({
      content: [
        { type: 'text' as const, text: `Rain in ${String(args.city)}`, annotations: { audience: ['user'] } },
        { type: 'resource_link' as const, uri: 'https://weather.example/oslo', name: 'oslo' },
      ],
      structuredContent: { city: args.city, sky: 'rain' },
    }),
  },
];

const textOf = (r: { content?: unknown }): string => (r.content as Array<{ text?: string }>)[0]?.text ?? '';

/**
 * The compact face (`?tools=compact`): a real client of either era lists three tools over an
 * agent's set of 120+, finds one with `search`, reads it with `describe` and runs it with `call`,
 * getting what the server sent (the same as calling the server directly); a tool outside the
 * agent's set is refused and never reaches its server; hostile arguments are bounded and named.
 */
describe('the agent MCP endpoint: the compact face', () => {
  let sys: EndpointSystem;
  let big: TestMcpServer;
  let other: TestMcpServer;
  let agentId: string;
  let token: string;

  beforeAll(async () => {
    [sys, big, other] = await Promise.all([
      startEndpointSystem(),
      startTestMcpServer({ era: 'modern', tools: bigTools() }),
      startTestMcpServer({ era: 'modern' }),
    ]);
    await sys.system.setServer('big', big.url);
    // Registered in the account, not granted to the agent.
    await sys.system.setServer('other', other.url);
    agentId = await sys.system.createAgent('compact', ['big'], NUMBERED + 1);
    ({ token } = await sys.token('compact'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([big?.close(), other?.close()]);
  });

  const compactUrl = (): URL => new URL(`${sys.urlOf(agentId)}?tools=compact`);
  const headers = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  async function v2(): Promise<Client> {
    const client = new Client({ name: 'compact-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(compactUrl(), { requestInit: { headers: headers() } }));
    return client;
  }

  it('an SDK v2 client lists 3 tools over 121, finds the forecast, describes it and calls it: the result is the server’s', async () => {
    const client = await v2();
    const direct = new Client({ name: 'direct', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await direct.connect(new StreamableHTTPClientTransport(new URL(big.url)));
    try {
      const full = new Client({ name: 'full', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await full.connect(
        new StreamableHTTPClientTransport(new URL(sys.urlOf(agentId)), { requestInit: { headers: headers() } }),
      );
      let fullCount = 0;
      let cursor: string | undefined;
      let fullForecast: unknown;
      do {
        const page = await full.listTools(cursor === undefined ? {} : { cursor });
        fullCount += page.tools.length;
        fullForecast ??= page.tools.find((t) => t.name === 'big__weather_forecast');
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      await full.close();
      expect(fullCount).toBe(NUMBERED + 1);

      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name)).toEqual(['search', 'describe', 'call']);
      expect(listed.nextCursor).toBeUndefined();

      const found = await client.callTool({ name: 'search', arguments: { query: 'weather forecast for a city' } });
      expect(found.isError).toBeFalsy();
      const answer = found.structuredContent as {
        tools: Array<{ name: string; server: string; permission: string }>;
        total: number;
      };
      expect(answer.tools[0]).toMatchObject({ name: 'big__weather_forecast', server: 'big' });
      expect(JSON.parse(textOf(found))).toEqual(answer);
      // An empty query pages through every tool by name.
      const all = (await client.callTool({ name: 'search', arguments: { query: '', limit: 50, offset: 100 } }))
        .structuredContent as { tools: Array<{ name: string }>; total: number };
      expect(all.total).toBe(NUMBERED + 1);
      expect(all.tools.map((t) => t.name)).toEqual([
        ...Array.from({ length: 20 }, (_, i) => `big__op_${String(100 + i).padStart(3, '0')}`),
        'big__weather_forecast',
      ]);

      const described = await client.callTool({
        name: 'describe',
        arguments: { names: ['big__weather_forecast', 'nope__x'] },
      });
      expect(described.structuredContent).toEqual({ tools: [fullForecast], unknown: ['nope__x'] });

      const viaCompact = await client.callTool({
        name: 'call',
        arguments: { name: 'big__weather_forecast', arguments: { city: 'Oslo' } },
      });
      const viaServer = await direct.callTool({ name: 'weather_forecast', arguments: { city: 'Oslo' } });
      expect(viaCompact.content).toEqual(viaServer.content);
      expect(viaCompact.structuredContent).toEqual(viaServer.structuredContent);

      // Every rule of the gateway holds on the inner call: the contract, here.
      const bad = await client.callTool({
        name: 'call',
        arguments: { name: 'big__weather_forecast', arguments: { city: 7 } },
      });
      expect(bad.isError).toBe(true);
      expect((bad._meta?.['io.mcpx/error'] as { code: string }).code).toBe('invalid_arguments');
    } finally {
      await client.close();
      await direct.close();
    }
  });

  it('refuses a tool outside the agent’s set: never asked of its server', async () => {
    const client = await v2();
    try {
      const before = other.stats.calls;
      const refused = await client.callTool({
        name: 'call',
        arguments: { name: 'other__echo', arguments: { text: 'x' } },
      });
      expect(refused.isError).toBe(true);
      expect(refused._meta?.['io.mcpx/error']).toMatchObject({ code: 'invalid_input', details: { field: 'name' } });
      expect(textOf(refused)).toMatch(/not a tool of this agent/);
      // Named directly, as on the full face: unknown.
      await expect(client.callTool({ name: 'other__echo', arguments: { text: 'x' } })).rejects.toThrow(/Unknown tool/);
      // describe does not reveal it either.
      expect(
        (await client.callTool({ name: 'describe', arguments: { names: ['other__echo'] } })).structuredContent,
      ).toEqual({ tools: [], unknown: ['other__echo'] });
      expect((await client.callTool({ name: 'search', arguments: { query: 'echo' } })).structuredContent).toMatchObject(
        { tools: [], total: 0 },
      );
      expect(other.stats.calls).toBe(before);
    } finally {
      await client.close();
    }
  });

  it('bounds hostile arguments with invalid_input naming the field, and treats a query as words, not a pattern', async () => {
    const client = await v2();
    const errorOf = async (name: string, args: Record<string, unknown>): Promise<unknown> => {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError, JSON.stringify(r)).toBe(true);
      return r._meta?.['io.mcpx/error'];
    };
    try {
      expect(await errorOf('search', { query: 'a'.repeat(1_000_000) })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'query', limit: 256 },
      });
      expect(await errorOf('search', { query: { $regex: '.*' } })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'query' },
      });
      expect(await errorOf('search', { query: 'x', limit: 1e9 })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'limit' },
      });
      expect(await errorOf('search', { query: 'x', offset: -1 })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'offset' },
      });
      expect(await errorOf('describe', { names: Array.from({ length: 10_000 }, (_, i) => `n${i}`) })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'names' },
      });
      expect(await errorOf('describe', { names: ['x'.repeat(10_000)] })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'names/0' },
      });
      expect(await errorOf('call', { name: 'x'.repeat(10_000) })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'name' },
      });
      expect(await errorOf('call', { name: 'big__op_001', arguments: [1, 2] })).toMatchObject({
        code: 'invalid_input',
        details: { field: 'arguments' },
      });
      // A catastrophic-backtracking pattern, control and bidi characters: words, matched as text.
      const pattern = await client.callTool({ name: 'search', arguments: { query: '(a+)+$ .* \u0000\u202e weather' } });
      expect(pattern.isError).toBeFalsy();
      expect((pattern.structuredContent as { tools: Array<{ name: string }> }).tools[0]?.name).toBe(
        'big__weather_forecast',
      );
      // The endpoint serves on.
      expect((await client.listTools()).tools).toHaveLength(3);
    } finally {
      await client.close();
    }
  });

  it('an SDK v1 client (2025-11-25) gets the same three tools, calls through `call`, and hears list_changed when the set changes', async () => {
    const legacy = new V1Client({ name: 'compact-v1', version: '1.0.0' });
    let heard = 0;
    legacy.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      heard++;
    });
    await legacy.connect(new V1Transport(compactUrl(), { requestInit: { headers: headers() } }));
    try {
      expect((await legacy.listTools()).tools.map((t) => t.name)).toEqual(['search', 'describe', 'call']);
      const r = await legacy.request(
        { method: 'tools/call', params: { name: 'call', arguments: { name: 'big__op_007', arguments: {} } } },
        CallToolResultSchema,
      );
      expect(r.content).toEqual([{ type: 'text', text: 'op 7' }]);
      // The GET stream opens on its own after the handshake: wait for it, then change the grant.
      await eventually(async () => ((await legacy.listTools()).tools.length === 3 ? true : undefined), 10_000, 'list');
      await new Promise((r) => setTimeout(r, 500));
      await sys.system.api.act('UpdateAgent', { agent: 'compact', definition: { mcpServers: ['big', 'other'] } });
      await eventually(async () => (heard > 0 ? true : undefined), 20_000, 'list_changed on the compact face');
      await eventually(
        async () => {
          const found = await legacy.request(
            { method: 'tools/call', params: { name: 'search', arguments: { query: 'echo' } } },
            CallToolResultSchema,
          );
          return (found.structuredContent as { tools: Array<{ name: string }> }).tools.some(
            (t) => t.name === 'other__echo',
          )
            ? true
            : undefined;
        },
        20_000,
        'the granted server searchable',
      );
    } finally {
      await sys.system.api.act('UpdateAgent', { agent: 'compact', definition: { mcpServers: ['big'] } });
      await legacy.close();
    }
  });
});
