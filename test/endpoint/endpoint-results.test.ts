import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  bigTextTool,
  echoTool,
  errorTool,
  imageTool,
  startTestMcpServer,
  structuredTool,
  TINY_PNG_BASE64,
  type TestMcpServer,
} from '../servers/index.js';
import { startEndpointSystem, type EndpointSystem, type ErrorMeta } from './endpoint-harness.js';

/**
 * Result shaping through the endpoint, as both SDK clients see it: images passed on, structured
 * content kept (and its output schema listed), the proxy's text bound with its marker, and a
 * server's own tool error as a tool result with `server_error`.
 */
describe('the agent MCP endpoint: results as the proxy shapes them', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    const tools = [
      echoTool(),
      imageTool(),
      errorTool('the disk is full'),
      structuredTool({ count: 3 }),
      bigTextTool(300 * 1024),
    ];
    [sys, upstream] = await Promise.all([startEndpointSystem(), startTestMcpServer({ era: 'dual', tools })]);
    await sys.system.setServer('shapes', upstream.url);
    await sys.system.createAgent('shaped', ['shapes'], tools.length);
    ({ token } = await sys.token('shaped'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const headers = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  /** Either SDK's client gets the image tool's two parts and the structured tool's content as the server gave them. */
  async function expectImageAndStructured(client: {
    callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<Record<string, unknown>>;
  }): Promise<void> {
    expect((await client.callTool({ name: 'shapes__image', arguments: {} })).content).toEqual([
      { type: 'text', text: 'a tiny image' },
      { type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' },
    ]);
    expect((await client.callTool({ name: 'shapes__structured', arguments: {} })).structuredContent).toEqual({
      count: 3,
    });
  }

  it('passes images, structured content and bounded text on, and says a tool error as server_error (SDK v2)', async () => {
    const client = new Client({ name: 'shapes', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('shaped')), { requestInit: { headers: headers() } }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'shapes__structured')?.outputSchema).toMatchObject({
        properties: { count: { type: 'number' } },
      });
      await expectImageAndStructured(client);
      const big = await client.callTool({ name: 'shapes__big_text', arguments: {} });
      const text = (big.content as Array<{ text: string }>)[0]!.text;
      expect(Buffer.byteLength(text)).toBeLessThan(300 * 1024);
      expect(text.length).toBeGreaterThan(200 * 1024);
      const failed = await client.callTool({ name: 'shapes__fail', arguments: {} });
      expect(failed.isError).toBe(true);
      expect((failed._meta as Record<string, ErrorMeta>)['io.mcpx/error']!.code).toBe('server_error');
      expect((failed.content as Array<{ text: string }>)[0]!.text).toContain('the disk is full');
    } finally {
      await client.close();
    }
  });

  it('gives an SDK v1 client the same results', async () => {
    const client = new V1Client({ name: 'shapes-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(sys.urlOf('shaped')), { requestInit: { headers: headers() } }));
    try {
      await expectImageAndStructured(client);
      const failed = await client.callTool({ name: 'shapes__fail', arguments: {} });
      expect(failed.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});
