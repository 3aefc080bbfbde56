import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { startConformanceUpstream, type ConformanceUpstream } from '../servers/conformance-upstream.js';
import { serveStatelessMcp } from '../servers/stateless-mcp.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { withBearer } from '../support/fixtures/bearer.js';

type LogParams = { level: string; logger?: string; data: unknown };
/** Within the 2,000 events the proxy reads of one response stream (a longer stream ends the call, `maybe_executed`). */
const FLOOD = 1_500;

/** A modern SDK v2 server whose tools log hostile amounts: a flood, a 100 KiB datum, a 1,000-deep one, an unknown level. */
async function startNoisyUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const factory = (): Server => {
    const server = new Server({ name: 'noisy', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
    server.setRequestHandler('tools/list', () => ({
      tools: [
        { name: 'flood', inputSchema: { type: 'object' as const } },
        { name: 'hostile', inputSchema: { type: 'object' as const } },
      ],
      ttlMs: 0,
      cacheScope: 'private' as const,
    }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const log = (params: Record<string, unknown>) => ctx.mcpReq.notify({ method: 'notifications/message', params });
      if (request.params.name === 'flood') {
        for (let i = 0; i < FLOOD; i++) await log({ level: 'info', data: i });
      } else {
        let deep: unknown = 'leaf';
        for (let i = 0; i < 1_000; i++) deep = [deep];
        await log({ level: 'error', logger: 'l'.repeat(1_000), data: 'x'.repeat(100 * 1024) });
        await log({ level: 'error', data: deep });
        await log({ level: 'loud', data: 'not a level' });
        await log({ level: 'error', data: { fine: true } });
      }
      return { content: [{ type: 'text' as const, text: 'done' }] };
    });
    return server;
  };
  return serveStatelessMcp(factory);
}

/**
 * MCP logging through the endpoint (docs/endpoint.md#logging): a 2025 client's
 * `logging/setLevel` is its token's level; a 2026-07-28 request carries its own in `_meta`; the
 * call's server's `notifications/message` reach the client that asked, at its level, bounded, and
 * no other token.
 */
describe('log messages of a call through the endpoint', () => {
  let sys: EndpointSystem;
  let conf: ConformanceUpstream;
  let noisy: Awaited<ReturnType<typeof startNoisyUpstream>>;

  beforeAll(async () => {
    [sys, conf, noisy] = await Promise.all([startEndpointSystem(), startConformanceUpstream(), startNoisyUpstream()]);
    await sys.system.setServer('conf', conf.url);
    await sys.system.setServer('noisy', noisy.url);
    await sys.system.createAgent('logger', ['conf', 'noisy'], 3);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([conf?.close(), noisy?.close()]);
  });

  const perServer = (server: string): string => `${sys.endpoint.url}/v1/agents/logger/servers/${server}/mcp`;
  const v1 = async (url: string, logs: LogParams[]): Promise<V1Client> => {
    const { token } = await sys.token('logger');
    const client = new V1Client({ name: 'v1-logs', version: '1.0.0' });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params as LogParams));
    await client.connect(new V1Transport(new URL(url), withBearer(token)));
    return client;
  };
  const v2 = async (url: string, logs: LogParams[]): Promise<Client> => {
    const { token } = await sys.token('logger');
    const client = new Client({ name: 'v2-logs', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params as LogParams));
    await client.connect(new StreamableHTTPClientTransport(new URL(url), withBearer(token)));
    return client;
  };

  it('2025-11-25: a client that set its level gets the call’s log messages as the server sent them; another token none', async () => {
    const direct: LogParams[] = [];
    const directClient = new V1Client({ name: 'v1-direct', version: '1.0.0' });
    directClient.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n) => void direct.push(n.params as LogParams),
    );
    await directClient.connect(new V1Transport(new URL(conf.url)));
    const logs: LogParams[] = [];
    const other: LogParams[] = [];
    const client = await v1(perServer('conf'), logs);
    const silent = await v1(perServer('conf'), other);
    try {
      await directClient.setLoggingLevel('debug');
      await directClient.callTool({ name: 'test_tool_with_logging', arguments: {} });
      expect(await client.setLoggingLevel('debug')).toEqual({});
      const result = await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: 'Tool with logging executed successfully' }]);
      expect(logs.map((l) => l.data)).toEqual([
        'Tool execution started',
        'Tool processing data',
        'Tool execution completed',
      ]);
      expect(logs).toEqual(direct);
      // The other token set no level: its identical call asks for no logs and hears none.
      await silent.callTool({ name: 'test_tool_with_logging', arguments: {} });
      expect(other).toEqual([]);
      // Not an MCP level: refused, typed; the token's level stays.
      await expect(client.setLoggingLevel('loud' as never)).rejects.toMatchObject({ code: -32602 });
      // Above the messages' level: none.
      await client.setLoggingLevel('warning');
      logs.length = 0;
      await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
      expect(logs).toEqual([]);
    } finally {
      await Promise.all([client.close(), silent.close(), directClient.close()]);
    }
  });

  it('2026-07-28: a request’s own _meta logLevel asks for its log messages (merged face); without it, none', async () => {
    const logs: LogParams[] = [];
    const client = await v2(sys.urlOf('logger'), logs);
    try {
      await client.callTool({ name: 'conf__test_logging_tool', arguments: {} });
      expect(logs).toEqual([]);
      await client.callTool({
        name: 'conf__test_logging_tool',
        arguments: {},
        _meta: { 'io.modelcontextprotocol/logLevel': 'info' },
      });
      expect(logs).toEqual([{ level: 'info', data: 'test_logging_tool ran' }]);
      logs.length = 0;
      await client.callTool({
        name: 'conf__test_logging_tool',
        arguments: {},
        _meta: { 'io.modelcontextprotocol/logLevel': 'error' },
      });
      expect(logs).toEqual([]);
      // logging/setLevel is not a 2026-07-28 method: not found, as on any 2026-07-28 server.
      const { token } = await sys.token('logger');
      const meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      };
      const res = await fetch(sys.urlOf('logger'), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'logging/setLevel',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'logging/setLevel',
          params: { level: 'debug', _meta: meta },
        }),
      });
      const body = (await res.json()) as { error?: { code: number } };
      expect({ status: res.status, code: body.error?.code }).toEqual({ status: 404, code: -32601 });
    } finally {
      await client.close();
    }
  });

  it('bounds a flood of 1,500 log messages and names what it left out; hostile messages get a bounded, typed outcome', async () => {
    const logs: LogParams[] = [];
    const client = await v2(perServer('noisy'), logs);
    try {
      const flooded = await client.callTool({
        name: 'flood',
        arguments: {},
        _meta: { 'io.modelcontextprotocol/logLevel': 'debug' },
      });
      expect(flooded.content).toEqual([{ type: 'text', text: 'done' }]);
      expect(logs.length).toBeGreaterThanOrEqual(20);
      expect(logs.length).toBeLessThan(FLOOD / 2);
      // In the server's order, the first ones whole, and the last names the drops.
      expect(logs.slice(0, 20).map((l) => l.data)).toEqual([...Array(20).keys()]);
      const last = logs.at(-1)!;
      expect(last).toMatchObject({ level: 'warning', logger: 'mcpx' });
      const dropped = Number(/^(\d+) log messages/.exec(String(last.data))?.[1]);
      expect(dropped + logs.length - 1).toBe(FLOOD);

      logs.length = 0;
      await client.callTool({ name: 'hostile', arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': 'debug' } });
      expect(logs).toHaveLength(3);
      expect(logs[0]!.logger).toHaveLength(128);
      expect(logs[0]!.data).toMatch(/left out: log data over the 8192-byte bound/);
      expect(logs[1]!.data).toMatch(/nested deeper than 32 levels/);
      expect(logs[2]).toEqual({ level: 'error', data: { fine: true } });
    } finally {
      await client.close();
    }
  });
});
