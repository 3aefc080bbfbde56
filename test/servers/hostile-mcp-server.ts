/**
 * A hostile MCP server on loopback, on node:http: it speaks Streamable HTTP like a legacy-era
 * (2025-11-25) server — `initialize` with a session id, notifications accepted with 202,
 * `tools/list`, `tools/call`, `ping`, DELETE, `server/discover` answered "method not found" — and
 * answers one chosen request with a hostile body (`hostile-bodies.ts`).
 *
 * Each attack has its own URL, `url(body, on)`: `on` is `list` (the `tools/list` answer),
 * `call` (the answer to a `tools/call` of `fetch_data`; `ping` answers normally) or `get` (the
 * GET stream a client opens after the handshake; every POST answers normally).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { listenOnLoopback } from './loopback.js';
import { HostileBody, sendHostile, type HostileSend } from './hostile-bodies.js';

export { HostileBody, type HostileSend } from './hostile-bodies.js';

export type HostileTrigger = 'list' | 'call' | 'get';

export interface HostileMcpServer {
  origin: string;
  /** The endpoint that answers `on` with `body`. */
  url(body: HostileBody, on: HostileTrigger): string;
  /** Every hostile answer sent, in order. */
  readonly attacks: HostileSend[];
  /** JSON-RPC methods received, with their counts (`GET` for GET streams). */
  readonly methods: Map<string, number>;
  close(): Promise<void>;
}

const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];
const MAX_REQUEST_BYTES = 1024 * 1024;

export const HOSTILE_TOOLS = [
  {
    name: 'fetch_data',
    description: 'Fetches data (its answer is the attack when the URL says so).',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'ping',
    description: 'Answers pong.',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
  },
];

interface JsonRpcRequest {
  jsonrpc?: string;
  id?: string | number;
  method?: string;
  params?: { protocolVersion?: string; name?: string };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parsePath(path: string): { body: HostileBody; on: HostileTrigger } | undefined {
  const m = /^\/([a-z-]+)\/(list|call|get)\/mcp$/.exec(path);
  const body = Object.values(HostileBody).find((b) => b === m?.[1]);
  return body === undefined || m === null ? undefined : { body, on: m[2] as HostileTrigger };
}

/** Starts a hostile MCP server on 127.0.0.1 (a free port). */
export async function startHostileMcpServer(): Promise<HostileMcpServer> {
  const attacks: HostileSend[] = [];
  const methods = new Map<string, number>();
  const count = (m: string): void => void methods.set(m, (methods.get(m) ?? 0) + 1);
  const hostile = (res: ServerResponse, body: HostileBody, id: unknown): void =>
    void attacks.push(sendHostile(res, body, id));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const route = parsePath(new URL(req.url ?? '/', 'http://x').pathname);
    if (route === undefined) return json(res, 404, { error: 'not found' });
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method === 'GET') {
      count('GET');
      if (route.on !== 'get') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
      // A GET stream is an event stream: the JSON bomb becomes its gzip form.
      const body = route.body === HostileBody.gzipBomb ? HostileBody.gzipSseBomb : route.body;
      return hostile(res, body, null);
    }
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const text = await readBody(req);
    let message: JsonRpcRequest;
    try {
      message = JSON.parse(text ?? '') as JsonRpcRequest;
    } catch {
      return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    const method = message.method ?? '';
    count(method);
    if (message.id === undefined) return void res.writeHead(202).end();
    const id = message.id;
    const answer = (result: unknown, headers: Record<string, string> = {}): void =>
      json(res, 200, { jsonrpc: '2.0', id, result }, headers);
    switch (method) {
      case 'initialize': {
        const asked = message.params?.protocolVersion ?? '';
        const protocolVersion = LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS[0];
        return answer(
          {
            protocolVersion,
            capabilities: { tools: { listChanged: false } },
            serverInfo: { name: 'hostile', version: '6.6.6' },
          },
          { 'mcp-session-id': randomUUID() },
        );
      }
      case 'ping':
        return answer({});
      case 'tools/list':
        if (route.on === 'list') return hostile(res, route.body, id);
        return answer({ tools: HOSTILE_TOOLS });
      case 'tools/call':
        if (route.on === 'call' && message.params?.name === 'fetch_data') return hostile(res, route.body, id);
        return answer({ content: [{ type: 'text', text: 'pong' }] });
      default:
        return json(res, 200, { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  const listening = await listenOnLoopback(server);
  const origin = `http://127.0.0.1:${listening.port}`;
  return {
    origin,
    url: (body, on) => `${origin}/${body}/${on}/mcp`,
    attacks,
    methods,
    close: () => listening.close(),
  };
}
