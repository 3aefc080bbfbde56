import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { APP_HTML, APP_MIME_TYPE, APP_URI, startAppsUpstream } from '../servers/apps-upstream.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

type Meta = Record<string, unknown> & { ui?: { resourceUri?: string; visibility?: string[] } };

/**
 * MCP Apps through the endpoint (docs/endpoint.md#mcp-apps): a tool's `_meta` is discovered, kept
 * on its document (bounded, less the connector's own keys) and listed on both faces; the per-server
 * face passes `ui.resourceUri` as the server wrote it, the merged face names the resource as it
 * serves it, and a client that reads that URI through the face gets the server's app HTML. A
 * `ui://` resource that is not HTML reaches no client as an app.
 */
describe('MCP Apps through the endpoint faces', () => {
  let sys: EndpointSystem;
  let upstream: Awaited<ReturnType<typeof startAppsUpstream>>;
  let token = '';
  let agentId = '';

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([startEndpointSystem(), startAppsUpstream()]);
    await sys.system.setServer('apps', upstream.url);
    agentId = await sys.system.createAgent('viewer', ['apps'], 3);
    ({ token } = await sys.token('viewer'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await upstream?.close();
  });

  const v2 = async (url: string): Promise<Client> => {
    const client = new Client({ name: 'apps-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  };
  const perServer = (): string => `${sys.endpoint.url}/v1/agents/viewer/servers/apps/mcp`;
  const merged = (): string => sys.urlOf('viewer');
  const metaOf = async (client: Client | V1Client, name: string): Promise<Meta> => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === name);
    expect(tool, name).toBeDefined();
    return tool!._meta as Meta;
  };

  it('lists a tool’s _meta on the per-server face as the server wrote it, and the app loads through the face', async () => {
    const direct = new Client({ name: 'direct', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url)));
    const client = await v2(perServer());
    try {
      const meta = await metaOf(client, 'weather');
      expect(meta.ui).toEqual({ resourceUri: APP_URI, visibility: ['model', 'app'] });
      expect(meta['ui/resourceUri']).toBe(APP_URI);
      expect(meta['com.example/tag']).toBe('kept');
      // The connector's keys are its own: the server's attempt at them is dropped.
      expect(meta['io.mcpx/server']).toBe('apps');
      expect(['act', 'always_ask']).toContain(meta['io.mcpx/permission']);
      // The value past the document's bound is named, not kept.
      expect(meta['com.example/huge']).toBeUndefined();
      expect(meta['io.mcpx/omitted']).toEqual({ keys: ['com.example/huge'], limit: 16 * 1024 });
      const app = await client.readResource({ uri: meta.ui!.resourceUri! });
      expect(app.contents).toEqual((await direct.readResource({ uri: APP_URI })).contents);
      expect(app.contents[0]).toMatchObject({ uri: APP_URI, mimeType: APP_MIME_TYPE, text: APP_HTML });
    } finally {
      await client.close();
      await direct.close();
    }
  });

  it('names the app by the merged face’s URI of the resource there, which reads the same HTML (SDK v2 and v1 clients)', async () => {
    const wrapped = `ui://apps/${encodeURIComponent(APP_URI)}`;
    const client = await v2(merged());
    const v1 = new V1Client({ name: 'apps-host-v1', version: '1.0.0' });
    await v1.connect(
      new V1Transport(new URL(merged()), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    try {
      for (const c of [client, v1]) {
        const meta = await metaOf(c, 'apps__weather');
        expect(meta.ui?.resourceUri).toBe(wrapped);
        expect(meta['ui/resourceUri']).toBe(wrapped);
        expect(meta.ui?.visibility).toEqual(['model', 'app']);
        // The URI is one the face lists and reads.
        const { resources } = await c.listResources();
        expect(resources.map((r) => r.uri)).toContain(wrapped);
        const app = await c.readResource({ uri: wrapped });
        expect(app.contents).toEqual([{ uri: wrapped, mimeType: APP_MIME_TYPE, text: APP_HTML }]);
      }
    } finally {
      await client.close();
      await v1.close();
    }
  });

  it('hands a NATS runtime the document with the tool’s _meta as the server wrote it (ListAgentTools)', async () => {
    const { tools } = await sys.system.api.act<{ tools: Array<{ name: string; _meta?: Meta }> }>('ListAgentTools', {
      agent: agentId,
    });
    const weather = tools.find((t) => t.name === 'apps__weather');
    expect(weather?._meta?.ui?.resourceUri).toBe(APP_URI);
    expect(Object.keys(weather?._meta ?? {}).filter((k) => k.startsWith('io.mcpx/'))).toEqual(['io.mcpx/omitted']);
  });

  it('replaces a ui:// resource that is not HTML by a marker that says what it was, on both faces', async () => {
    const client = await v2(perServer());
    const mergedClient = await v2(merged());
    try {
      for (const [c, uri, shown] of [
        [client, 'ui://weather/app.js', 'ui://weather/app.js'],
        [client, 'ui://weather/bare', 'ui://weather/bare'],
        [
          mergedClient,
          `ui://apps/${encodeURIComponent('ui://weather/app.js')}`,
          `ui://apps/${encodeURIComponent('ui://weather/app.js')}`,
        ],
      ] as const) {
        const read = await c.readResource({ uri });
        expect(read.contents).toHaveLength(1);
        const content = read.contents[0] as {
          uri: string;
          mimeType?: string;
          text?: string;
          _meta?: Record<string, unknown>;
        };
        expect(content.uri).toBe(shown);
        expect(content.mimeType).toBe('text/plain');
        expect(content.text).toMatch(/must be HTML/);
        expect(content.text).not.toMatch(/alert/);
        expect(content._meta?.['io.mcpx/omitted']).toMatchObject({ type: 'resource', reason: 'not_html' });
        expect(read._meta?.['io.mcpx/omitted']).toEqual({ notHtml: 1 });
      }
    } finally {
      await client.close();
      await mergedClient.close();
    }
  });
});
