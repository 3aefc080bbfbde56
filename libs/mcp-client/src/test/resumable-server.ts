import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpHttpRequest } from '../http-request.js';

/**
 * A hand-written Streamable HTTP server on loopback (stateful, one session) whose answer to one
 * method is an SSE stream that breaks before the response: a priming event with an id and a
 * `retry:`, maybe more events, then the end of the response or a dropped connection. A GET with
 * `Last-Event-ID` then gets what `resume` says. Everything else is answered as JSON.
 */
export interface ResumableServerOptions {
  /** The method whose response stream breaks. Default `tools/call`. */
  breakOn?: 'tools/call' | 'tools/list';
  /** SSE text written before the break; `{id}` is replaced by the JSON-RPC id. Default {@link primed}. */
  before?: string;
  /** `end` ends the response; `drop` destroys the connection mid-stream. Default `drop`. */
  breakWith?: 'end' | 'drop';
  /**
   * The answer to a GET with `Last-Event-ID`: `deliver` an SSE stream with the response, `405`,
   * `empty` (an SSE stream that ends with no event), `hold` (one that stays open and silent).
   * Default `deliver`. A GET without `Last-Event-ID` (a client's general stream) always gets 405.
   */
  resume?: 'deliver' | 405 | 'empty' | 'hold';
}

/** A priming event with an id and a retry, then a progress notification with the last id before the break. */
export function primed(retryMs = 20): string {
  return (
    `id: ev-1\nretry: ${retryMs}\ndata: \n\n` +
    'event: message\nid: ev-2\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\n'
  );
}

export interface ResumableServer {
  url: string;
  sessionId: string;
  /** Headers of every GET that carried `Last-Event-ID`, in order. */
  resumptions: IncomingHttpHeaders[];
  /** The method's calls that got a broken stream. */
  broken: number;
  close(): Promise<void>;
}

export const TOOLS = [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }];

export function echoResult(args: unknown): { content: Array<{ type: 'text'; text: string }> } {
  return { content: [{ type: 'text', text: `echo: ${String((args as { text?: unknown } | undefined)?.text)}` }] };
}

export async function startResumableServer(opts: ResumableServerOptions = {}): Promise<ResumableServer> {
  const breakOn = opts.breakOn ?? 'tools/call';
  const resume = opts.resume ?? 'deliver';
  const sessionId = `session-${Math.random().toString(36).slice(2)}`;
  /** The response the broken stream owed, redelivered on resumption. */
  let owed: string | undefined;
  const state: ResumableServer = { url: '', sessionId, resumptions: [], broken: 0, close: async () => {} };

  const json = (res: ServerResponse, status: number, body?: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json', 'mcp-session-id': sessionId });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };

  const onPost = (req: IncomingMessage, res: ServerResponse, raw: string): void => {
    const msg = JSON.parse(raw) as { id?: string | number; method: string; params?: { arguments?: unknown } };
    if (msg.id === undefined) return json(res, 202);
    const result =
      msg.method === 'initialize'
        ? {
            protocolVersion: '2025-11-25',
            serverInfo: { name: 'resumable', version: '1.0.0' },
            capabilities: { tools: {} },
          }
        : msg.method === 'tools/list'
          ? { tools: TOOLS }
          : msg.method === 'tools/call'
            ? echoResult(msg.params?.arguments)
            : {};
    if (msg.method !== 'initialize' && req.headers['mcp-session-id'] !== sessionId) {
      return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    }
    if (msg.method !== breakOn) return json(res, 200, { jsonrpc: '2.0', id: msg.id, result });
    state.broken += 1;
    owed = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result });
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'mcp-session-id': sessionId,
    });
    const before = (opts.before ?? primed()).replaceAll('{id}', JSON.stringify(msg.id));
    if ((opts.breakWith ?? 'drop') === 'end') res.end(before);
    else res.write(before, () => res.socket?.destroy());
  };

  const onGet = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.headers['last-event-id'] === undefined || resume === 405) {
      if (req.headers['last-event-id'] !== undefined) state.resumptions.push(req.headers);
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
      return;
    }
    state.resumptions.push(req.headers);
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'mcp-session-id': sessionId,
    });
    if (resume === 'empty') res.end();
    else if (resume === 'deliver' && owed !== undefined) res.end(`event: message\nid: ev-3\ndata: ${owed}\n\n`);
    else res.flushHeaders(); // hold
  };

  const server = createServer((req, res) => {
    if (req.method === 'GET') return onGet(req, res);
    if (req.method === 'DELETE') return json(res, 200);
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => onPost(req, res, raw));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

/**
 * A {@link McpHttpRequest} over node:http (a real HTTP client, its own keep-alive agent): the
 * shape of the proxy's outbound request, given to `connectMcp` as `request`.
 */
export function nodeRequest(): McpHttpRequest {
  return (url, opts) =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        url,
        { method: opts.method, headers: opts.headers, ...(opts.signal ? { signal: opts.signal } : {}) },
        (res) => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res }),
      );
      req.on('error', (err) => reject(opts.signal?.aborted ? err : new TypeError('fetch failed', { cause: err })));
      req.end(opts.body);
    });
}
