import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { listenOnLoopback } from './loopback.js';

/** A server that `serveV1Sessions` started. */
export interface V1Sessions {
  /** `http://127.0.0.1:PORT/mcp`. */
  url: string;
  /** Closes every open session, then the port. */
  close(): Promise<void>;
}

const readJson = async (req: IncomingMessage): Promise<unknown> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw === '' ? undefined : (JSON.parse(raw) as unknown);
};

/**
 * Serves SDK v1 `Server`s over Streamable HTTP with sessions (2025-11-25) on a loopback port: an
 * `initialize` POST opens a session on a server `newServer` makes (`sessionOf` reads that
 * session's id); a request naming an unknown session is answered 404, any other request without
 * one 400, each with the SDK's JSON-RPC error.
 */
export async function serveV1Sessions(newServer: (sessionOf: () => string | undefined) => Server): Promise<V1Sessions> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const sid = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (existing) {
        await existing.handleRequest(req, res, body);
        return;
      }
      if (typeof sid === 'string' || req.method !== 'POST' || !isInitializeRequest(body)) {
        res.writeHead(typeof sid === 'string' ? 404 : 400, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32000, message: 'Bad Request: no valid session' },
            id: null,
          }),
        );
        return;
      }
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void sessions.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await newServer(() => transport.sessionId).connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const listening = await listenOnLoopback(http);
  return {
    url: `http://127.0.0.1:${listening.port}/mcp`,
    close: async () => {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      await listening.close();
    },
  };
}
