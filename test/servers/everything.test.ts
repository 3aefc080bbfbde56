import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp } from '@mcpx/mcp-client';
import { startEverythingServer, type EverythingServer } from './everything.js';

describe.each(['streamableHttp', 'sse'] as const)('server-everything over %s', (transport) => {
  let server: EverythingServer;
  beforeAll(async () => {
    server = await startEverythingServer(transport);
  });
  afterAll(async () => {
    await server.close();
  });

  it('lists tools and calls echo', async () => {
    const connection = await connectMcp({ url: server.url, connectTimeoutMs: 10_000 });
    try {
      expect(connection.transport).toBe(transport === 'sse' ? 'sse' : 'http');
      const tools = await connection.listTools();
      expect(tools.map((t) => t.name)).toContain('echo');
      const result = await connection.callTool({ name: 'echo', arguments: { message: 'hello' } });
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
    } finally {
      await connection.close();
    }
  });
});
