import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, type Server } from '@modelcontextprotocol/server';
import { listenOnLoopback } from './loopback.js';

/** A server that `serveStatelessMcp` started. */
export interface StatelessMcp {
  /** `http://127.0.0.1:PORT/mcp`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves an SDK v2 `Server` made per request by `factory` on a loopback port, to both eras
 * (`legacy: 'stateless'`: 2025-11-25 traffic served per request) or, with `legacy: 'reject'`, to
 * 2026-07-28 clients only; `close` stops the handler, then the port.
 */
export async function serveStatelessMcp(
  factory: () => Server,
  legacy: 'stateless' | 'reject' = 'stateless',
): Promise<StatelessMcp> {
  const handler = createMcpHandler(factory, { legacy });
  const node = toNodeHandler(handler);
  const listening = await listenOnLoopback(createServer((req, res) => void node(req, res)));
  return {
    url: `http://127.0.0.1:${listening.port}/mcp`,
    close: async () => {
      await handler.close();
      await listening.close();
    },
  };
}

/** A `resources/templates/list` handler for a server with no templates (not to be kept: `ttlMs` 0). */
export const noResourceTemplates = () => ({ resourceTemplates: [], ttlMs: 0, cacheScope: 'private' as const });
