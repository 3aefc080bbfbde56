import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { localhostHostValidation, NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import {
  classifyInboundRequest,
  createMcpHandler,
  createRequestStateCodec,
  isInitializeRequest,
  McpServer,
  type RequestStateCodec,
} from '@modelcontextprotocol/server';
import { registerPrompts, registerResources, registerUtilities } from './conformance-upstream-content.js';
import { registerInputPrompt, registerInputTools } from './conformance-upstream-inputs.js';
import {
  registerFixedTools,
  registerNotifyingTools,
  registerPushTools,
  registerTriggerTools,
  type ChangeNotifier,
} from './conformance-upstream-tools.js';
import { listenOnLoopback } from './loopback.js';

/**
 * A conformant MCP server for the official server conformance scenarios
 * (`@modelcontextprotocol/conformance server`), on SDK v2, serving both eras on one `/mcp`:
 * - 2026-07-28 requests (the per-request `_meta` envelope, and malformed claims of it, which that
 *   path answers) go to `createMcpHandler` (a server per request, `subscriptions/listen`,
 *   `input_required` with a sealed `requestState`);
 * - 2025-11-25 traffic gets the stateful Streamable HTTP of that revision: `initialize` opens a
 *   session (`Mcp-Session-Id`), the GET stream, server-to-client sampling and elicitation during a
 *   call, resource subscriptions, DELETE ends the session.
 * One definition of tools, resources and prompts backs both (`createFixture`). A Host that is not
 * loopback is refused (403), as the DNS-rebinding scenario expects of a local server.
 */
export interface ConformanceUpstream {
  /** `http://127.0.0.1:PORT/mcp`. */
  url: string;
  port: number;
  /** 2025 sessions open now. */
  sessions(): number;
  close(): Promise<void>;
}

const INFO = { name: 'mcpx-conformance-fixture', version: '1.0.0' };
/** A 2025 session that sees no request for this long is closed (the scenarios never DELETE some). */
const SESSION_IDLE_MS = 120_000;

function createFixture(codec: RequestStateCodec<Record<string, unknown>>, notify: ChangeNotifier): McpServer {
  const server = new McpServer(INFO, {
    capabilities: {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      // Deprecated in 2026-07-28 but the 2025 revision's logging/setLevel needs it declared.
      logging: {},
      completions: {},
    },
    // A re-sent request whose requestState fails the seal is refused (-32602) before its handler.
    requestState: { verify: (state, ctx) => codec.verify(state, ctx) },
  });
  registerFixedTools(server);
  registerNotifyingTools(server);
  registerPushTools(server);
  registerTriggerTools(server, notify);
  registerInputTools(server, codec);
  registerInputPrompt(server);
  registerResources(server, new Set());
  registerPrompts(server);
  registerUtilities(server);
  return server;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, code: number, message: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The 2025 sessions: one transport and one server each, closed on DELETE, idleness or close. */
class LegacySessions {
  private readonly open = new Map<string, { transport: NodeStreamableHTTPServerTransport; timer: NodeJS.Timeout }>();

  constructor(private readonly create: () => McpServer) {}

  get size(): number {
    return this.open.size;
  }

  async handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const id = header(req.headers['mcp-session-id']);
    const session = id === undefined ? undefined : this.open.get(id);
    if (session !== undefined) {
      session.timer.refresh();
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (id !== undefined) return answer(res, 404, -32_001, 'Session not found');
    if (req.method !== 'POST' || !isInitializeRequest(body))
      return answer(res, 400, -32_000, 'Bad Request: Session ID required');
    const server = this.create();
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        const timer = setTimeout(() => void transport.close(), SESSION_IDLE_MS);
        timer.unref();
        this.open.set(sid, { transport, timer });
      },
    });
    transport.onclose = () => {
      const sid = transport.sessionId;
      if (sid === undefined) return;
      clearTimeout(this.open.get(sid)?.timer);
      this.open.delete(sid);
      void server.close();
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.values()].map((s) => s.transport.close()));
  }
}

export async function startConformanceUpstream(opts: { port?: number } = {}): Promise<ConformanceUpstream> {
  const codec = createRequestStateCodec<Record<string, unknown>>({ key: crypto.getRandomValues(new Uint8Array(32)) });
  // The triggers publish on the modern handler's listen streams; the handler is made after the
  // factory that needs it, so the factory reaches it through this late-bound notifier.
  const notify: ChangeNotifier = {
    toolsChanged: () => modern.notify.toolsChanged(),
    promptsChanged: () => modern.notify.promptsChanged(),
  };
  const create = (): McpServer => createFixture(codec, notify);
  const modern = createMcpHandler(create, { legacy: 'reject' });
  const modernNode = toNodeHandler(modern);
  const legacy = new LegacySessions(create);
  const hostAllowed = localhostHostValidation();

  const server = createServer((req, res) => {
    void route(req, res).catch(() => {
      if (!res.headersSent) answer(res, 500, -32_603, 'Internal server error');
      else res.end();
    });
  });
  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!hostAllowed(req, res)) return;
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    let body: unknown;
    if (req.method === 'POST') {
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return answer(res, 400, -32_700, 'Parse error');
      }
    }
    const inbound = classifyInboundRequest({
      httpMethod: req.method ?? 'GET',
      protocolVersionHeader: header(req.headers['mcp-protocol-version']),
      mcpMethodHeader: header(req.headers['mcp-method']),
      body,
    });
    if (inbound.kind !== 'legacy') return await modernNode(req, res, body);
    await legacy.handle(req, res, body);
  }

  const listening = await listenOnLoopback(server, { port: opts.port ?? 0 });
  return {
    url: `http://127.0.0.1:${listening.port}/mcp`,
    port: listening.port,
    sessions: () => legacy.size,
    close: async () => {
      await legacy.closeAll();
      await modern.close();
      await listening.close();
    },
  };
}
