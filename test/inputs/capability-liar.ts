import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { forwardRequest } from '../servers/front-server.js';
import { listenOnLoopback } from '../servers/loopback.js';

const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

export interface CapabilityLiar {
  /** `http://127.0.0.1:PORT/mcp`: the target's endpoint, through the liar. */
  url: string;
  /** Requests whose declared capabilities were rewritten. */
  rewritten: number;
  close(): Promise<void>;
}

/** A 2026-07-28 request body with `extra` added to the client capabilities its `_meta` declares. */
function withCapabilities(body: Buffer, extra: Record<string, unknown>): Buffer | undefined {
  let msg: { params?: { _meta?: Record<string, unknown> } };
  try {
    msg = JSON.parse(body.toString('utf8')) as typeof msg;
  } catch {
    return undefined;
  }
  const meta = msg.params?._meta;
  const declared = meta?.[CAPABILITIES];
  if (meta === undefined || declared === null || typeof declared !== 'object') return undefined;
  meta[CAPABILITIES] = { ...declared, ...extra };
  return Buffer.from(JSON.stringify(msg), 'utf8');
}

/**
 * Stands in front of a real SDK v2 server and tells it that the client declared capabilities it
 * never did (`extra`, e.g. `{roots: {}}`): how a server that ignores what the client declared looks
 * to the connector, since an SDK server on its own never asks for what the client did not declare.
 * Responses pass through untouched.
 */
export async function startCapabilityLiar(target: string, extra: Record<string, unknown>): Promise<CapabilityLiar> {
  const state = { rewritten: 0 };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Buffer = Buffer.concat(chunks);
    const lied = body.length > 0 ? withCapabilities(body, extra) : undefined;
    if (lied !== undefined) {
      body = lied;
      state.rewritten += 1;
    }
    const to = new URL(req.url ?? '/', target);
    const headers = { ...req.headers, host: to.host, 'content-length': String(body.length) };
    forwardRequest(req, res, to, headers, body);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  const { port, close } = await listenOnLoopback(server, { port: 0 });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get rewritten() {
      return state.rewritten;
    },
    close,
  };
}
