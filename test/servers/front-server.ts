import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { listenOnLoopback } from './loopback.js';

/**
 * A plain HTTP server on loopback that stands in front of (or instead of) an MCP server, for the
 * cases a real MCP server does not produce on its own:
 * - `redirect`: answers every request with a 307 to the same path on `target` (another origin);
 * - `forward`: passes every request to `target` (streams, SSE included), optionally after a delay,
 *   and records the JSON-RPC bodies it forwarded (to see what the client sent, e.g. `clientInfo`);
 * - `echo`: answers every request with `status` and a body that echoes the request headers back
 *   (a misbehaving server that would reflect a secret into an error message);
 * - `drop`: closes the connection of its first `drops` requests once it has read them, answering
 *   nothing (a server that closes a kept-alive connection as it is reused, or restarts), and
 *   forwards the rest to `target`;
 * - `oversize`: while `armed()`, answers a POST of the JSON-RPC `method` with a result of about
 *   `bytes` bytes (one long description), and forwards the rest to `target` (a server whose
 *   answer grew past a client's bound after it was discovered).
 */
export type FrontServerOptions =
  | { mode: 'redirect'; target: string }
  | { mode: 'forward'; target: string; delayMs?: number }
  | { mode: 'echo'; status: number }
  | { mode: 'drop'; target: string; drops: number }
  | { mode: 'oversize'; target: string; method: string; bytes: number; armed: () => boolean };

export interface FrontServer {
  /** `http://127.0.0.1:PORT` (no path: append the path the target serves). */
  origin: string;
  port: number;
  /** Parsed JSON bodies of the POSTs it saw (forward mode). */
  bodies: unknown[];
  /** Requests seen. */
  requests: number;
  /** Each request's HTTP method and `Mcp-Session-Id`, in order (to see a session's DELETE). */
  seen: Array<{ method: string; sessionId?: string }>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Sends `req` on to `to` with `headers` and `body` (already read), and streams the answer back
 * through `res` as it comes: a 502 if `to` cannot be reached before the answer began, a cut
 * response after; the request to `to` ends when `res` closes.
 */
export function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  to: URL,
  headers: OutgoingHttpHeaders,
  body: Buffer,
): void {
  const upstream = httpRequest(to, { method: req.method, headers }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502).end();
    else res.destroy();
  });
  res.on('close', () => upstream.destroy());
  upstream.end(body);
}

export async function startFrontServer(opts: FrontServerOptions, port = 0): Promise<FrontServer> {
  const state = { bodies: [] as unknown[], requests: 0, seen: [] as Array<{ method: string; sessionId?: string }> };

  async function readAll(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    state.requests++;
    const sid = req.headers['mcp-session-id'];
    state.seen.push({ method: req.method ?? '', ...(typeof sid === 'string' ? { sessionId: sid } : {}) });
    if (opts.mode === 'redirect') {
      res.writeHead(307, { location: new URL(req.url ?? '/', opts.target).toString() }).end();
      return;
    }
    if (opts.mode === 'echo') {
      await readAll(req);
      res
        .writeHead(opts.status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'denied', youSent: req.headers }));
      return;
    }
    const body = await readAll(req);
    if (opts.mode === 'drop' && state.requests <= opts.drops) {
      req.socket.destroy();
      return;
    }
    let rpc: unknown;
    if (body.length > 0) {
      try {
        rpc = JSON.parse(body.toString('utf8'));
        state.bodies.push(rpc);
      } catch {
        // not JSON: not recorded
      }
    }
    if (opts.mode === 'oversize' && opts.armed()) {
      const { id, method } = (rpc ?? {}) as { id?: unknown; method?: unknown };
      if (method === opts.method) {
        const tools = [{ name: 'big', description: 'x'.repeat(opts.bytes), inputSchema: { type: 'object' } }];
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools } }));
        return;
      }
    }
    if (opts.mode === 'forward' && opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
    const target = new URL(req.url ?? '/', opts.target);
    forwardRequest(req, res, target, { ...req.headers, host: target.host }, body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  const { port: listening, close } = await listenOnLoopback(server, { port });
  return {
    origin: `http://127.0.0.1:${listening}`,
    port: listening,
    get bodies() {
      return state.bodies;
    },
    get requests() {
      return state.requests;
    },
    get seen() {
      return state.seen;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
