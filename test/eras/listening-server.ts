import { createServer, type IncomingMessage } from 'node:http';
import { createMcpHandler, Server, type Tool } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { listenOnLoopback } from '../servers/loopback.js';

export interface ListeningServer {
  url: string;
  stats: { discovers: number; lists: number; listens: number; calls: number };
  /** Replaces the tool list and publishes `notifications/tools/list_changed` on every open `subscriptions/listen` stream. */
  changeTools(names: string[]): void;
  close(): Promise<void>;
}

/**
 * A modern-only (2026-07-28) server on the official SDK v2 that advertises `tools.listChanged`
 * and publishes list changes to its open `subscriptions/listen` streams (the handler's notifier),
 * counting the requests that matter to change streams. A call of the tool named `cut` is received
 * (counted) and its response stream opened, then the connection is cut before any result: the
 * call may have run, and the client cannot know.
 */
export async function startListeningServer(names: string[], opts: { cut?: string } = {}): Promise<ListeningServer> {
  let tools: Tool[] = names.map((name) => ({ name, inputSchema: { type: 'object' } }));
  const stats = { discovers: 0, lists: 0, listens: 0, calls: 0 };
  const handler = createMcpHandler(
    () => {
      const server = new Server(
        { name: 'listening', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true } } },
      );
      server.setRequestHandler('tools/list', () => {
        stats.lists++;
        return { tools, ttlMs: 60_000, cacheScope: 'public' as const };
      });
      server.setRequestHandler('tools/call', () => ({ content: [{ type: 'text' as const, text: 'ok' }] }));
      return server;
    },
    { legacy: 'reject' },
  );
  const handle = toNodeHandler(handler);
  const readJson = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
  };
  const http = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const method = (body as { method?: unknown } | undefined)?.method;
      if (method === 'server/discover') stats.discovers++;
      if (method === 'subscriptions/listen') stats.listens++;
      if (method === 'tools/call') stats.calls++;
      if (
        method === 'tools/call' &&
        opts.cut !== undefined &&
        (body as { params?: { name?: unknown } }).params?.name === opts.cut
      ) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(': working\n\n');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      await handle(req, res, body);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.end();
    });
  });
  const listening = await listenOnLoopback(http);
  return {
    url: `http://127.0.0.1:${listening.port}/mcp`,
    stats,
    changeTools(next) {
      tools = next.map((name) => ({ name, inputSchema: { type: 'object' } }));
      handler.notify.toolsChanged();
    },
    close: async () => {
      await handler.close().catch(() => undefined);
      await listening.close();
    },
  };
}
