import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server, type Tool } from '@modelcontextprotocol/server';
import { toNodeHandler, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import type { TestTool } from './test-tools.js';

export interface ModernHandlerOptions {
  /** `reject`: modern era only (2026-07-28); `stateless`: both eras, 2025 traffic served per request. */
  legacy: 'reject' | 'stateless';
  /** The current tool list (read per request, so `setTools` takes effect at once). */
  tools: () => TestTool[];
  pageSize?: number;
  cursorLoop?: boolean;
  /** `ttlMs`/`cacheScope` of each `tools/list` page. */
  listHints?: { ttlMs: number; cacheScope: 'public' | 'private' };
  onList: () => void;
  onCall: () => void;
}

const SERVER_INFO = { name: 'mcpx-test-server', version: '0.1.0' };

/**
 * A real SDK v2 server for `/mcp`: `createMcpHandler` with a low-level `Server` per request (tool
 * schemas are listed verbatim, as a remote server would), on a Node request handler.
 * `toolsChanged()` sends `notifications/tools/list_changed` on every open `subscriptions/listen`.
 */
export function modernMcpHandler(opts: ModernHandlerOptions): {
  handle: NodeMcpRequestHandler;
  toolsChanged(): void;
  close(): Promise<void>;
} {
  const factory = (): Server => {
    const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler('tools/list', (request) => {
      opts.onList();
      const all = opts.tools().map(toWireTool);
      const hints = opts.listHints ?? {};
      const pageSize = opts.pageSize;
      if (pageSize === undefined) return { tools: all, ...hints };
      const cursor = request.params?.cursor;
      const offset = cursor === undefined ? 0 : Number(cursor);
      if (!Number.isInteger(offset) || offset < 0 || offset > all.length) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid cursor: ${cursor}`);
      }
      const next = offset + pageSize;
      const nextCursor = opts.cursorLoop ? '0' : next < all.length ? String(next) : undefined;
      return { tools: all.slice(offset, next), ...hints, ...(nextCursor === undefined ? {} : { nextCursor }) };
    });
    server.setRequestHandler('tools/call', async (request, ctx) => {
      opts.onCall();
      const tool = opts.tools().find((t) => t.name === request.params.name);
      if (!tool) return { content: [{ type: 'text', text: `Unknown tool: ${request.params.name}` }], isError: true };
      // Test tools are written against the 2025 result type; the shapes agree on the wire.
      const token = request.params._meta?.progressToken;
      const progress = async (value: number, total?: number, message?: string): Promise<void> => {
        if (token === undefined) return;
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: value, total, message },
        });
      };
      return await tool.handler(request.params.arguments ?? {}, { signal: ctx.mcpReq.signal, progress });
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: opts.legacy });
  return {
    handle: toNodeHandler(handler),
    toolsChanged: () => handler.notify.toolsChanged(),
    close: async () => await handler.close(),
  };
}

function toWireTool(tool: TestTool): Tool {
  return {
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: (tool.inputSchema ?? { type: 'object' }) as Tool['inputSchema'],
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  };
}
