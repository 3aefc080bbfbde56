import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import {
  classifyInboundRequest,
  createMcpHandler,
  InMemoryServerEventBus,
  isInitializeRequest,
  Server,
  type ServerEvent,
} from '@modelcontextprotocol/server';
import { listenOnLoopback } from './loopback.js';

/**
 * An SDK v2 MCP server whose resources change under its clients: `test://watched/<n>` resources,
 * resource subscriptions, list changes. `eras: 'both'` serves 2026-07-28 (`subscriptions/listen`,
 * the SDK's router) and 2025 sessions; `'legacy'` only 2025 sessions (`resources/subscribe`, the
 * GET stream), as an older server. The test drives it: `update(uri, times)` says a resource
 * changed (`times` at once: a flood), `listsChanged()` that its tools and prompts did.
 */
export interface SubscribingUpstream {
  url: string;
  /** Says `uri` changed, `times` times in a row, to every subscriber of either era. */
  update(uri: string, times?: number): void;
  /** Says its tools, prompts and resources lists changed. */
  listsChanged(): void;
  /** 2025 subscriptions held now (URIs over all sessions). */
  legacySubscriptions(): number;
  /** 2026 listen streams open now (each one's filter: lists, or resources). */
  listens(): number;
  /** Every resource URI a 2026 listen or a 2025 subscribe asked for, in order. */
  asked(): string[];
  close(): Promise<void>;
}

const CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
};

function serverOf(name: string, subscribed?: Set<string>, asked?: string[]): Server {
  const server = new Server({ name, version: '1.0.0' }, { capabilities: CAPABILITIES });
  server.setRequestHandler('tools/list', () => ({
    tools: [{ name: 'noop', inputSchema: { type: 'object' as const } }],
    ttlMs: 0,
    cacheScope: 'private' as const,
  }));
  server.setRequestHandler('tools/call', () => ({ content: [{ type: 'text' as const, text: 'ok' }] }));
  server.setRequestHandler('prompts/list', () => ({ prompts: [], ttlMs: 0, cacheScope: 'private' as const }));
  server.setRequestHandler('resources/list', () => ({
    resources: [1, 2, 3].map((n) => ({ uri: `test://watched/${n}`, name: `watched ${n}` })),
    ttlMs: 0,
    cacheScope: 'private' as const,
  }));
  server.setRequestHandler('resources/read', (request) => ({
    contents: [{ uri: request.params.uri, text: `now ${Date.now()}` }],
  }));
  if (subscribed !== undefined) {
    server.setRequestHandler('resources/subscribe', (request) => {
      asked?.push(request.params.uri);
      subscribed.add(request.params.uri);
      return {};
    });
    server.setRequestHandler('resources/unsubscribe', (request) => {
      subscribed.delete(request.params.uri);
      return {};
    });
  }
  return server;
}

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

async function readJson(req: IncomingMessage): Promise<unknown> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  return body === '' ? undefined : (JSON.parse(body) as unknown);
}

export async function startSubscribingUpstream(opts: { eras?: 'both' | 'legacy' } = {}): Promise<SubscribingUpstream> {
  const asked: string[] = [];
  // The modern handler's change bus, observed: each listen stream subscribes to it once.
  const bus = new InMemoryServerEventBus();
  const listening = new Set<() => void>();
  const observed = {
    publish: (e: ServerEvent) => bus.publish(e),
    subscribe: (l: (e: ServerEvent) => void) => {
      const off = bus.subscribe(l);
      listening.add(off);
      return () => {
        listening.delete(off);
        off();
      };
    },
  };
  const modern = createMcpHandler(() => serverOf('subscribing-upstream'), { legacy: 'reject', bus: observed });
  const modernNode = toNodeHandler(modern);
  const sessions = new Map<
    string,
    { transport: NodeStreamableHTTPServerTransport; server: Server; subscribed: Set<string> }
  >();

  async function legacy(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const id = header(req.headers['mcp-session-id']);
    const hit = id === undefined ? undefined : sessions.get(id);
    if (hit !== undefined) return await hit.transport.handleRequest(req, res, body);
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      res
        .writeHead(id === undefined ? 400 : 404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    const subscribed = new Set<string>();
    const server = serverOf('subscribing-upstream', subscribed, asked);
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => void sessions.set(sid, { transport, server, subscribed }),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const m = body as
        { method?: string; params?: { notifications?: { resourceSubscriptions?: string[] } } } | undefined;
      if (m?.method === 'subscriptions/listen') asked.push(...(m.params?.notifications?.resourceSubscriptions ?? []));
      const inbound = classifyInboundRequest({
        httpMethod: req.method ?? 'GET',
        protocolVersionHeader: header(req.headers['mcp-protocol-version']),
        mcpMethodHeader: header(req.headers['mcp-method']),
        body,
      });
      if (opts.eras !== 'legacy' && inbound.kind !== 'legacy') return await modernNode(req, res, body);
      await legacy(req, res, body);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.end();
    });
  });
  const listened = await listenOnLoopback(http);
  return {
    url: `http://127.0.0.1:${listened.port}/mcp`,
    update: (uri, times = 1) => {
      for (let i = 0; i < times; i++) {
        modern.notify.resourceUpdated(uri);
        for (const s of sessions.values())
          if (s.subscribed.has(uri)) void s.server.sendResourceUpdated({ uri }).catch(() => undefined);
      }
    },
    listsChanged: () => {
      modern.notify.toolsChanged();
      modern.notify.promptsChanged();
      modern.notify.resourcesChanged();
      for (const s of sessions.values()) {
        void s.server.sendToolListChanged().catch(() => undefined);
        void s.server.sendPromptListChanged().catch(() => undefined);
      }
    },
    legacySubscriptions: () => [...sessions.values()].reduce((n, s) => n + s.subscribed.size, 0),
    listens: () => listening.size,
    asked: () => [...asked],
    close: async () => {
      await Promise.all([...sessions.values()].map((s) => s.transport.close()));
      await modern.close();
      await listened.close();
    },
  };
}
