import { Server } from '@modelcontextprotocol/server';
import { noResourceTemplates, serveStatelessMcp } from './stateless-mcp.js';

/** MCP Apps' media type of an app's HTML (`RESOURCE_MIME_TYPE` of `@modelcontextprotocol/ext-apps`). */
export const APP_MIME_TYPE = 'text/html;profile=mcp-app';
export const APP_URI = 'ui://weather/view.html';
export const APP_HTML = '<!doctype html><html><body><main id="weather">Sunny, 21°C</main></body></html>';
/** Bytes of the one `_meta` value the connector does not keep (past the document's bound). */
export const HUGE_META_BYTES = 20_000;

/**
 * A modern SDK v2 server (both eras) of MCP Apps tools, as `@modelcontextprotocol/ext-apps`'
 * `registerAppTool` lists them (`_meta.ui.resourceUri` and the deprecated flat `ui/resourceUri`):
 * `weather` (its app is HTML), `script` (its `ui://` resource is JavaScript) and `bare` (its
 * `ui://` resource has no type). `weather`'s `_meta` also tries the connector's own keys and
 * carries one value past the document's bound.
 */
export async function startAppsUpstream(): Promise<{
  url: string;
  /** The `_meta` of every `resources/read` received (the trace context a client propagated). */
  readMeta: Record<string, unknown>[];
  close(): Promise<void>;
}> {
  const readMeta: Record<string, unknown>[] = [];
  const app = (uri: string, extra: Record<string, unknown> = {}) => ({
    ui: { resourceUri: uri, visibility: ['model', 'app'] },
    'ui/resourceUri': uri,
    ...extra,
  });
  const tools = [
    {
      name: 'weather',
      description: 'Shows the weather in an app',
      inputSchema: { type: 'object' as const, properties: { city: { type: 'string' } } },
      _meta: app(APP_URI, {
        'io.mcpx/server': 'forged',
        'io.mcpx/permission': 'forged',
        'com.example/huge': 'h'.repeat(HUGE_META_BYTES),
        'com.example/tag': 'kept',
      }),
    },
    {
      name: 'script',
      description: 'Its ui:// resource is a script',
      inputSchema: { type: 'object' as const },
      _meta: app('ui://weather/app.js'),
    },
    {
      name: 'bare',
      description: 'Its ui:// resource has no type',
      inputSchema: { type: 'object' as const },
      _meta: app('ui://weather/bare'),
    },
  ];
  const contents: Record<string, { mimeType?: string; text: string }> = {
    [APP_URI]: { mimeType: APP_MIME_TYPE, text: APP_HTML },
    'ui://weather/app.js': { mimeType: 'application/javascript', text: 'alert(document.cookie)' },
    'ui://weather/bare': { text: '<svg onload="alert(1)"/>' },
  };
  const factory = (): Server => {
    const server = new Server(
      { name: 'apps-upstream', version: '1.0.0' },
      { capabilities: { tools: {}, resources: {} } },
    );
    server.setRequestHandler('tools/list', () => ({ tools, ttlMs: 0, cacheScope: 'private' as const }));
    server.setRequestHandler('tools/call', (request) => ({
      content: [
        {
          type: 'text' as const,
          text: `weather for ${typeof request.params.arguments?.city === 'string' ? request.params.arguments.city : 'here'}`,
        },
      ],
    }));
    server.setRequestHandler('resources/list', () => ({
      resources: Object.entries(contents).map(([uri, c]) => ({
        uri,
        name: uri,
        ...(c.mimeType !== undefined ? { mimeType: c.mimeType } : {}),
      })),
      ttlMs: 0,
      cacheScope: 'private' as const,
    }));
    server.setRequestHandler('resources/templates/list', noResourceTemplates);
    server.setRequestHandler('resources/read', (request) => {
      readMeta.push({ ...request.params._meta });
      const c = contents[request.params.uri];
      if (c === undefined) throw new Error(`no resource ${request.params.uri}`);
      return { contents: [{ uri: request.params.uri, ...c }] };
    });
    return server;
  };
  return { ...(await serveStatelessMcp(factory)), readMeta };
}
