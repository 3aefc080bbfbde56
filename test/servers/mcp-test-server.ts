import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Prompt,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { modernMcpHandler } from './modern-mcp-handler.js';
import { defaultTools, type TestTool } from './test-tools.js';

export interface TestMcpServerOptions {
  /**
   * The server's protocol posture on `/mcp`: `legacy` (default for now) is an SDK v1 server
   * (2025-11-25, sessions, SSE too); `modern` is SDK v2's `createMcpHandler` with
   * `legacy: 'reject'` (2026-07-28 only, no sessions); `dual` serves both eras
   * (`legacy: 'stateless'`). `modern` and `dual` are Streamable HTTP only.
   */
  era?: 'modern' | 'dual' | 'legacy';
  /** Modern and dual: `ttlMs`/`cacheScope` on every `tools/list` page. */
  listHints?: { ttlMs: number; cacheScope: 'public' | 'private' };
  /** `http`: Streamable HTTP on `/mcp`; `sse`: legacy `GET /sse` + `POST /messages`; `both`. Default `http`. */
  transport?: 'http' | 'sse' | 'both';
  /** Default: `echo` and `add`. */
  tools?: TestTool[];
  /**
   * Legacy: declare prompts and answer `prompts/list` with one prompt (`greet`), or with the
   * prompts given (e.g. one whose description is larger than a bound of the client).
   */
  prompts?: boolean | Prompt[];
  /** Paginate `tools/list` with this many tools per page. */
  pageSize?: number;
  /** With `pageSize`: every `nextCursor` points back to the first page (a misbehaving server). */
  cursorLoop?: boolean;
  /** Answer 401 with a JSON error unless this header carries this value. */
  requireHeader?: { name: string; value: string };
  /**
   * Answer 401 with `WWW-Authenticate: Bearer resource_metadata="<url>"` (an OAuth-protected
   * server) and serve that metadata document. A request that satisfies `requireHeader` passes.
   */
  requireBearerWithOAuthMetadata?: boolean;
  /**
   * A real OAuth-protected resource: metadata names `authorizationServer`, and a request passes
   * only with `Authorization: Bearer <token>` that `verify` accepts (else 401 with
   * `WWW-Authenticate: Bearer resource_metadata=...`). See `oauth-server.ts`.
   */
  oauth?: { authorizationServer: string; verify(token: string): Promise<boolean> };
  /**
   * Legacy: how an unknown session id is answered: 404 "Session not found" (the 2025 spec, the
   * default) or 400 "No valid session ID provided" (what SDK v1 servers, server-everything among
   * them, answer after a restart).
   */
  lostSession?: 404 | 400;
  /** Default 0 (a free port); pass a previous server's port to restart "the same" server. */
  port?: number;
  host?: '127.0.0.1';
}

export interface TestMcpServerStats {
  /** `initialize` requests seen (0 for a modern client: it has no handshake). */
  handshakes: number;
  /** `server/discover` requests seen (the probe of a client in mode auto). */
  discovers: number;
  /** `tools/call` requests handled. */
  calls: number;
  /** `tools/list` requests handled. */
  listCalls: number;
  /** TCP connections currently open. */
  openSockets(): number;
  /** Every `traceparent` header received (the trace context the client propagated), the last 1,000 at least. */
  traceparents: string[];
  /** The `traceparent` header of each JSON-RPC request received, by method (absent: `''`), the last 1,000 at least. */
  traceparentsByMethod: Map<string, string[]>;
  /** Header values received, by lowercased name (to prove what the client sent). */
  headersSeen: Map<string, string[]>;
  /** The `_meta` of each request a modern or dual server received, by method (the last 20 of each). */
  metaSeen: Map<string, Record<string, unknown>[]>;
  /**
   * The legacy sessions open now: each one's `tools/list` and `tools/call` requests handled, and
   * whether an event stream is open that its unsolicited notifications (`tools/list_changed`) can
   * go on (a Streamable HTTP session's GET stream; a legacy SSE session's stream is the session).
   */
  sessions(): SessionStats[];
}

export interface SessionStats {
  lists: number;
  calls: number;
  streamOpen: boolean;
}

export interface TestMcpServer {
  /** `http://127.0.0.1:PORT/mcp`, or the SSE endpoint `http://127.0.0.1:PORT/sse` for `transport: 'sse'`. */
  url: string;
  port: number;
  stats: TestMcpServerStats;
  /**
   * Replace the tool list and send `notifications/tools/list_changed` to every connected session
   * (legacy) or every open `subscriptions/listen` stream (modern, dual).
   */
  setTools(tools: TestTool[]): void;
  /**
   * Legacy SSE: breaks every session's event stream now, `end`ing it (the server closes the
   * response) or `reset`ting its socket (as a crash or a network fault does). Each session is
   * gone on the server after it; returns how many streams were broken.
   */
  breakSseStreams(how: 'end' | 'reset'): number;
  /** Close every session and socket, then the listener. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

interface Session {
  server: Server;
  transport: Transport;
  counts: SessionCounts;
}

interface SessionCounts {
  lists: number;
  calls: number;
  /** Event streams open for the session's unsolicited messages. */
  streams: number;
}

const SERVER_INFO = { name: 'mcpx-test-server', version: '0.1.0' };
const CLOSE_WAIT_MS = 5_000;

/** Starts a real MCP server (SDK low-level `Server`, one per session) on loopback. */
export async function startTestMcpServer(opts: TestMcpServerOptions = {}): Promise<TestMcpServer> {
  const era = opts.era ?? 'legacy';
  const mode = era === 'legacy' ? (opts.transport ?? 'http') : 'http';
  const host = opts.host ?? '127.0.0.1';
  let tools = opts.tools ?? defaultTools();
  const prompts: Prompt[] | undefined =
    opts.prompts === true
      ? [{ name: 'greet', description: 'Says hello.' }]
      : Array.isArray(opts.prompts)
        ? opts.prompts
        : undefined;
  const sessions = new Map<string, Session>();
  const sockets = new Set<Socket>();
  /** The open event streams of legacy SSE sessions. */
  const sseStreams = new Set<ServerResponse>();
  const stats: TestMcpServerStats = {
    handshakes: 0,
    discovers: 0,
    calls: 0,
    listCalls: 0,
    openSockets: () => sockets.size,
    traceparents: [],
    traceparentsByMethod: new Map(),
    headersSeen: new Map(),
    metaSeen: new Map(),
    sessions: () =>
      [...sessions.values()].map(({ counts }) => ({
        lists: counts.lists,
        calls: counts.calls,
        streamOpen: counts.streams > 0,
      })),
  };
  let origin = '';

  function createSessionServer(counts: SessionCounts): Server {
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: true }, ...(prompts !== undefined ? { prompts: {} } : {}) },
    });
    if (prompts !== undefined) server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts }));
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      stats.listCalls += 1;
      counts.lists += 1;
      const all = tools.map(toWireTool);
      const pageSize = opts.pageSize;
      if (pageSize === undefined) return { tools: all };
      const cursor = request.params?.cursor;
      const offset = cursor === undefined ? 0 : Number(cursor);
      if (!Number.isInteger(offset) || offset < 0 || offset > all.length) {
        throw new McpError(ErrorCode.InvalidParams, `Invalid cursor: ${cursor}`);
      }
      const next = offset + pageSize;
      const nextCursor = opts.cursorLoop ? '0' : next < all.length ? String(next) : undefined;
      return { tools: all.slice(offset, next), ...(nextCursor === undefined ? {} : { nextCursor }) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      stats.calls += 1;
      counts.calls += 1;
      const tool = tools.find((t) => t.name === request.params.name);
      if (!tool) {
        return { content: [{ type: 'text', text: `Unknown tool: ${request.params.name}` }], isError: true };
      }
      const token = request.params._meta?.progressToken;
      const progress = async (value: number, total?: number, message?: string): Promise<void> => {
        if (token === undefined) return;
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: value, total, message },
        });
      };
      return await tool.handler(request.params.arguments ?? {}, { signal: extra.signal, progress });
    });
    return server;
  }

  function countHandshakes(body: unknown, req: IncomingMessage): void {
    const messages = Array.isArray(body) ? body : [body];
    if (req !== undefined) {
      const tp = req.headers.traceparent;
      for (const m of messages) {
        const method = (m as { method?: unknown; id?: unknown } | null)?.method;
        if (typeof method !== 'string' || (m as { id?: unknown }).id === undefined) continue;
        const seen = stats.traceparentsByMethod.get(method) ?? [];
        if (seen.length === 0) stats.traceparentsByMethod.set(method, seen);
        keepLast(seen, typeof tp === 'string' ? tp : '');
      }
    }
    stats.handshakes += messages.filter((m) => isInitializeRequest(m)).length;
    stats.discovers += messages.filter((m) => (m as { method?: unknown } | null)?.method === 'server/discover').length;
  }

  const modern =
    era === 'legacy'
      ? undefined
      : modernMcpHandler({
          legacy: era === 'modern' ? 'reject' : 'stateless',
          tools: () => tools,
          ...(opts.pageSize === undefined ? {} : { pageSize: opts.pageSize }),
          ...(opts.cursorLoop === undefined ? {} : { cursorLoop: opts.cursorLoop }),
          ...(opts.listHints === undefined ? {} : { listHints: opts.listHints }),
          onList: () => {
            stats.listCalls += 1;
          },
          onCall: () => {
            stats.calls += 1;
          },
        });

  async function handleModern(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (body instanceof SyntaxError) {
      sendRpcError(res, 400, ErrorCode.ParseError, 'Parse error');
      return;
    }
    countHandshakes(body, req);
    recordMeta(body);
    await modern?.handle(req, res, body);
  }

  function recordMeta(body: unknown): void {
    const msg = body as { method?: unknown; params?: { _meta?: unknown } } | undefined;
    const meta = msg?.params?._meta;
    if (typeof msg?.method !== 'string' || meta === null || typeof meta !== 'object') return;
    stats.metaSeen.set(
      msg.method,
      [...(stats.metaSeen.get(msg.method) ?? []), meta as Record<string, unknown>].slice(-20),
    );
  }

  async function authorized(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    if (opts.oauth) {
      const header = req.headers.authorization;
      const token = typeof header === 'string' && /^Bearer /i.test(header) ? header.slice(7).trim() : '';
      if (token !== '' && (await opts.oauth.verify(token))) return true;
      res.setHeader(
        'WWW-Authenticate',
        `Bearer error="invalid_token", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
      );
      sendJson(res, 401, { error: 'invalid_token', error_description: 'a valid bearer token is required' });
      return false;
    }
    const required = opts.requireHeader;
    const headerOk = required !== undefined && req.headers[required.name.toLowerCase()] === required.value;
    if (opts.requireBearerWithOAuthMetadata && !headerOk) {
      const metadata = `${origin}/.well-known/oauth-protected-resource/mcp`;
      res.setHeader('WWW-Authenticate', `Bearer resource_metadata="${metadata}"`);
      sendJson(res, 401, { error: 'invalid_token', error_description: 'Bearer token required' });
      return false;
    }
    if (required !== undefined && !headerOk) {
      sendJson(res, 401, { error: 'unauthorized', message: `missing or wrong ${required.name} header` });
      return false;
    }
    return true;
  }

  async function handleStreamable(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (body instanceof SyntaxError) {
      sendRpcError(res, 400, ErrorCode.ParseError, 'Parse error');
      return;
    }
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session || !(session.transport instanceof StreamableHTTPServerTransport)) {
        if (opts.lostSession === 400)
          sendRpcError(res, 400, ErrorCode.ConnectionClosed, 'Bad Request: No valid session ID provided');
        else sendRpcError(res, 404, -32001, 'Session not found');
        return;
      }
      countHandshakes(body, req);
      if (req.method === 'GET') countStream(session.counts, res);
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      sendRpcError(res, 400, ErrorCode.InvalidRequest, 'Bad Request: no valid session id');
      return;
    }
    countHandshakes(body, req);
    const counts: SessionCounts = { lists: 0, calls: 0, streams: 0 };
    const server = createSessionServer(counts);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        sessions.set(id, { server, transport, counts });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async function handleSseOpen(res: ServerResponse): Promise<void> {
    const counts: SessionCounts = { lists: 0, calls: 0, streams: 1 };
    const server = createSessionServer(counts);
    const transport = new SSEServerTransport('/messages', res);
    sseStreams.add(res);
    res.once('close', () => sseStreams.delete(res));
    transport.onclose = () => {
      sessions.delete(transport.sessionId);
    };
    sessions.set(transport.sessionId, { server, transport, counts });
    await server.connect(transport);
  }

  async function handleSsePost(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const session = sessions.get(url.searchParams.get('sessionId') ?? '');
    if (!session || !(session.transport instanceof SSEServerTransport)) {
      sendJson(res, 404, { error: 'session not found' });
      return;
    }
    const body = await readJson(req);
    if (body instanceof SyntaxError) {
      sendRpcError(res, 400, ErrorCode.ParseError, 'Parse error');
      return;
    }
    countHandshakes(body, req);
    await session.transport.handlePostMessage(req, res, body);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (
      url.pathname.startsWith('/.well-known/oauth-protected-resource') &&
      (opts.requireBearerWithOAuthMetadata || opts.oauth)
    ) {
      sendJson(res, 200, {
        resource: `${origin}/mcp`,
        authorization_servers: [opts.oauth?.authorizationServer ?? origin],
        bearer_methods_supported: ['header'],
      });
      return;
    }
    const http = mode === 'http' || mode === 'both';
    const sse = mode === 'sse' || mode === 'both';
    if (url.pathname === '/mcp' && http) {
      if (await authorized(req, res))
        await (modern === undefined ? handleStreamable(req, res) : handleModern(req, res));
      return;
    }
    if (url.pathname === '/sse' && sse) {
      if (!(await authorized(req, res))) return;
      if (req.method === 'GET') await handleSseOpen(res);
      else sendJson(res, 405, { error: 'method not allowed' }, { Allow: 'GET' });
      return;
    }
    if (url.pathname === '/messages' && sse && req.method === 'POST') {
      if (await authorized(req, res)) await handleSsePost(req, res, url);
      return;
    }
    sendJson(res, 404, { error: 'not found' });
  }

  const httpServer = createServer((req, res) => {
    const tp = req.headers.traceparent;
    if (typeof tp === 'string') keepLast(stats.traceparents, tp);
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === 'string') stats.headersSeen.set(k, [...(stats.headersSeen.get(k) ?? []), v].slice(-20));
    }
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
      else res.end();
    });
  });
  httpServer.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(opts.port ?? 0, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const address = httpServer.address();
  if (address === null || typeof address === 'string') throw new Error('test MCP server has no port');
  const port = address.port;
  origin = `http://${host}:${port}`;

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    closing ??= (async () => {
      const open = [...sessions.values()];
      sessions.clear();
      await modern?.close().catch(() => {});
      await withTimeout(Promise.allSettled(open.map(async (s) => await s.server.close())), CLOSE_WAIT_MS);
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      httpServer.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await withTimeout(closed, CLOSE_WAIT_MS);
    })();
    await closing;
  }

  return {
    url: mode === 'sse' ? `${origin}/sse` : `${origin}/mcp`,
    port,
    stats,
    setTools(next: TestTool[]): void {
      tools = next;
      modern?.toolsChanged();
      for (const session of sessions.values()) {
        session.server.sendToolListChanged().catch(() => {
          // A session whose stream is gone just misses the notification.
        });
      }
    },
    breakSseStreams(how: 'end' | 'reset'): number {
      const open = [...sseStreams];
      sseStreams.clear();
      for (const res of open) {
        if (how === 'end') res.end();
        else res.socket?.resetAndDestroy();
      }
      return open.length;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * A session's GET, counted as its open stream from when the transport answers it 200 (its event
 * stream: a refused GET is a 4xx) until it closes. The transport writes the stream's head, then
 * its events until it ends, so only the head tells when it opened.
 */
function countStream(counts: SessionCounts, res: ServerResponse): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = (...args: unknown[]) => {
    const written = writeHead(...args);
    if (res.statusCode === 200) {
      counts.streams += 1;
      res.once('close', () => {
        counts.streams -= 1;
      });
    }
    return written;
  };
}

function toWireTool(tool: TestTool): Tool {
  return {
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: (tool.inputSchema ?? { type: 'object' }) as Tool['inputSchema'],
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema as Tool['outputSchema'] }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  };
}

/** The parsed body, `undefined` for an empty one, or the SyntaxError of a malformed one. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    return error instanceof SyntaxError ? error : new SyntaxError(String(error));
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Traces kept per list: a benchmark sends the server tens of thousands of calls. */
const KEPT_TRACES = 1_000;

/**
 * Appends `item`, keeping the last {@link KEPT_TRACES} at least (in place, the front dropped in one
 * go once it doubles: a copy of the whole list per request made each request slower than the last).
 */
function keepLast(list: string[], item: string): void {
  list.push(item);
  if (list.length > 2 * KEPT_TRACES) list.splice(0, list.length - KEPT_TRACES);
}
