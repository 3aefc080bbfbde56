import { randomUUID } from 'node:crypto';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Counter, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import { ErrorCodes, INPUT_REQUEST_ID_RE, WireError, toWireError, type InputRequestItem } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import type { ProxyClient } from '@mcpx/proxy-client';
import { createMcpHandler, inputRequired, ProtocolError, ProtocolErrorCode, ResourceNotFoundError, Server, type CallToolResult, type InputRequiredResult, type McpHttpHandler, type Tool } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { META_APPROVAL_ID, META_INPUT_REQUEST_ID, callToolResult, errorResult } from './call-result.js';
import type { AgentToolSet, ToolSets } from './tool-sets.js';

export const SERVER_NAME = 'mcpx-agent';
/** How long a client may keep a `tools/list` page (`ttlMs`): list_changed says sooner when it changes. */
export const LIST_TTL_MS = 60_000;
/** The proxy's own call timeout; a client's request may ask for less in `_meta`, never more. */
const CALL_TIMEOUT_MS = 120_000;

export interface AgentServerDeps {
  toolSets: ToolSets;
  proxy: ProxyClient;
  tracer: Tracer;
  meter: Meter;
  /** Tools per `tools/list` page. */
  pageSize: number;
  version: string;
  onError: (err: Error) => void;
}

interface Metrics {
  requests: Counter;
  duration: Histogram;
}

const SERVER_OPTIONS = { capabilities: { tools: { listChanged: true }, prompts: {}, resources: {} } };
const LIST_HINTS = { ttlMs: LIST_TTL_MS, cacheScope: 'private' as const };
const listPrompts = (): { prompts: []; ttlMs: number; cacheScope: 'private' } => ({ prompts: [], ...LIST_HINTS });
const getPrompt = (request: { params: { name: string } }): never => {
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown prompt: ${request.params.name.slice(0, 128)}`);
};
const listResources = (): { resources: []; ttlMs: number; cacheScope: 'private' } => ({ resources: [], ...LIST_HINTS });
const listResourceTemplates = (): { resourceTemplates: []; ttlMs: number; cacheScope: 'private' } => ({ resourceTemplates: [], ...LIST_HINTS });
const readResource = (request: { params: { uri: string } }): never => {
  throw new ResourceNotFoundError(request.params.uri.slice(0, 512));
};

/** A `tools/list` cursor: the last name of the previous page (stable while the set changes). */
function encodeCursor(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const name = /^[A-Za-z0-9_-]{1,400}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (name === '' || encodeCursor(name) !== cursor) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
  return name;
}

/** A document as an MCP tool: its contract whole, its permission level in `_meta`. */
function toTool(doc: McpToolDocument): Tool {
  return {
    name: doc.name,
    ...(doc.title !== undefined ? { title: doc.title } : {}),
    description: doc.description,
    inputSchema: doc.inputSchema as Tool['inputSchema'],
    ...(doc.outputSchema !== undefined ? { outputSchema: doc.outputSchema } : {}),
    ...(doc.annotations !== undefined ? { annotations: doc.annotations } : {}),
    _meta: { 'io.mcpx/permission': doc.permission, 'io.mcpx/server': doc.server },
  };
}

/** The trace context a client sent: `_meta.traceparent` (2026-07-28), else the HTTP headers. */
function parentContext(meta: Record<string, unknown> | undefined, request: Request | undefined): ReturnType<typeof context.active> {
  const carrier: Record<string, string> = {};
  const tp = meta?.traceparent ?? request?.headers.get('traceparent') ?? undefined;
  const ts = meta?.tracestate ?? request?.headers.get('tracestate') ?? undefined;
  if (typeof tp === 'string') carrier.traceparent = tp;
  if (typeof ts === 'string') carrier.tracestate = ts;
  return propagation.extract(context.active(), carrier);
}

/**
 * One agent's MCP server: `createMcpHandler` (both eras: 2026-07-28 per request, 2025 stateless)
 * over a low-level `Server` per request that lists the agent's tool set and sends each call
 * through the proxy as the token's run, so every rule of the gateway applies (validation with the
 * contract, the grant, approvals, limits, result bounds, tracing). A handler per agent, so that
 * `notify.toolsChanged()` reaches exactly that agent's `subscriptions/listen` streams.
 */
export class AgentServers {
  private readonly handlers = new Map<string, { handler: McpHttpHandler; unwatch: () => void }>();
  private readonly metrics: Metrics;
  private readonly info: { name: string; version: string };
  /**
   * Calls in flight by token and JSON-RPC request id: a 2025 client's `notifications/cancelled`
   * arrives as a POST of its own (stateless serving: another server instance), so it finds the
   * call here. Two calls of one token under one id (two clients sharing a token) are ambiguous:
   * such a cancel is ignored, as MCP allows, rather than stopping the wrong one.
   */
  private readonly inflight = new Map<string, Array<() => void>>();

  constructor(
    private readonly deps: AgentServerDeps,
    private readonly maxHandlers = 10_000,
  ) {
    this.info = { name: SERVER_NAME, version: deps.version };
    this.metrics = {
      requests: deps.meter.createCounter('mcpx_endpoint_requests_total', { description: 'MCP requests to agent endpoints, by method and outcome' }),
      duration: deps.meter.createHistogram('mcpx_endpoint_call_duration_ms', { description: 'tools/call through the agent endpoint, end to end (ms)', unit: 'ms' }),
    };
  }

  /** Counts a request refused before any MCP handling (host, origin, token). */
  refused(reason: string): void {
    this.metrics.requests.add(1, { method: 'http', outcome: reason });
  }

  /** The handler of the token's agent (made on first use, the oldest dropped past the cap). */
  handlerFor(grant: TokenGrant): McpHttpHandler {
    const key = `${grant.account}:${grant.agent}`;
    const hit = this.handlers.get(key);
    if (hit !== undefined) return hit.handler;
    const handler = createMcpHandler(({ authInfo }) => this.server(grant.account, grant.agent, authInfo?.clientId ?? 'unknown'), {
      legacy: 'stateless',
      onerror: (err) => this.deps.onError(err),
    });
    const unwatch = this.deps.toolSets.watch(grant.account, grant.agent, () => handler.notify.toolsChanged());
    this.handlers.set(key, { handler, unwatch });
    if (this.handlers.size > this.maxHandlers) {
      const [oldKey, old] = this.handlers.entries().next().value as [string, { handler: McpHttpHandler; unwatch: () => void }];
      this.handlers.delete(oldKey);
      old.unwatch();
      void old.handler.close();
    }
    return handler;
  }

  async close(): Promise<void> {
    const all = [...this.handlers.values()];
    this.handlers.clear();
    for (const h of all) h.unwatch();
    await Promise.all(all.map((h) => h.handler.close().catch(() => undefined)));
  }

  private async toolSet(account: string, agent: string): Promise<AgentToolSet> {
    const set = await this.deps.toolSets.get(account, agent);
    // The token's agent was deleted since the token was read.
    if (set === null) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'the agent no longer exists');
    return set;
  }

  /** The per-request server; `tokenId` names the run the calls go in (`ep-<token id>`). */
  private server(account: string, agent: string, tokenId: string): Server {
    // Tools are what an agent has; its prompts and resources are none (yet): empty lists, with the
    // same cache hints, rather than "method not found" to clients that ask.
    // (A server per request is what the stateless serving asks for; what does not depend on the
    // request is made once: the info, the capabilities, the empty lists' handlers.)
    const server = new Server(this.info, SERVER_OPTIONS);
    server.setRequestHandler('prompts/list', listPrompts);
    server.setRequestHandler('prompts/get', getPrompt);
    server.setRequestHandler('resources/list', listResources);
    server.setRequestHandler('resources/templates/list', listResourceTemplates);
    server.setRequestHandler('resources/read', readResource);
    server.setRequestHandler('tools/list', async (request) => {
      const set = await this.toolSet(account, agent);
      const cursor = request.params?.cursor;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const start = after === undefined ? 0 : set.tools.findIndex((t) => t.name > after);
      const page = start < 0 ? [] : set.tools.slice(start, start + this.deps.pageSize);
      const last = page.at(-1);
      const more = start >= 0 && start + this.deps.pageSize < set.tools.length && last !== undefined;
      this.metrics.requests.add(1, { method: 'tools/list', outcome: 'ok' });
      return {
        tools: page.map(toTool),
        ttlMs: LIST_TTL_MS,
        cacheScope: 'private' as const,
        ...(more ? { nextCursor: encodeCursor(last.name) } : {}),
      };
    });
    // A 2025 client's cancel of a call that another request (instance) serves.
    server.setNotificationHandler('notifications/cancelled', (notification) => {
      const id = (notification.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id !== 'string' && typeof id !== 'number') return;
      const calls = this.inflight.get(`${tokenId}\u0000${String(id)}`);
      if (calls?.length === 1) calls[0]?.();
    });
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const params = request.params;
      const meta = (ctx.mcpReq._meta ?? params._meta);
      const parent = parentContext(meta, ctx.http?.req);
      const span = this.deps.tracer.startSpan('endpoint.tools/call', { kind: SpanKind.SERVER, attributes: { 'mcpx.account': account, 'mcpx.agent': agent, 'mcpx.tool': params.name } }, parent);
      const started = performance.now();
      let outcome = 'ok';
      try {
        return await context.with(trace.setSpan(parent, span), async (): Promise<CallToolResult | InputRequiredResult> => {
          const set = await this.toolSet(account, agent);
          if (!set.byName.has(params.name)) {
            outcome = 'unknown_tool';
            // The MCP answer to a tool that is not listed (the proxy is not asked).
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${params.name.slice(0, 128)}`);
          }
          const approval = meta?.[META_APPROVAL_ID];
          // A server's question passed on to this client comes back with the answers and the id
          // as its requestState (bound by the proxy to this run, tool and arguments, used once); one
          // the owner answered is re-sent with the id in _meta.
          const echoed = (ctx.mcpReq as { requestState?: () => unknown }).requestState?.();
          const metaInput = meta?.[META_INPUT_REQUEST_ID];
          const inputRequestId = typeof echoed === 'string' && INPUT_REQUEST_ID_RE.test(echoed) ? echoed : typeof metaInput === 'string' && INPUT_REQUEST_ID_RE.test(metaInput) ? metaInput : undefined;
          const inputResponses = (ctx.mcpReq as { inputResponses?: Record<string, unknown> }).inputResponses;
          // What this client can answer itself, as it declared: forms (elicitation) and sampling.
          const caps = (ctx.mcpReq as { envelope?: { clientCapabilities?: Record<string, unknown> } }).envelope?.clientCapabilities ?? (server.getClientCapabilities()) ?? {};
          const answers = { ...(caps.elicitation !== undefined ? { forms: true } : {}), ...(caps.sampling !== undefined ? { sampling: true } : {}) };
          const callId = randomUUID();
          const signal = ctx.mcpReq.signal;
          let cancelled = false;
          const onAbort = (): void => {
            if (cancelled) return;
            cancelled = true;
            void this.deps.proxy.cancel(account, `ep-${tokenId}`, callId).catch(() => undefined);
          };
          signal.addEventListener('abort', onAbort, { once: true });
          const inflightKey = `${tokenId}\u0000${String(ctx.mcpReq.id)}`;
          const calls = this.inflight.get(inflightKey);
          if (calls === undefined) this.inflight.set(inflightKey, [onAbort]);
          else calls.push(onAbort);
          try {
            const { result } = await this.deps.proxy.call({
              account,
              agent,
              run: `ep-${tokenId}`,
              tool: params.name,
              arguments: (params.arguments ?? {}),
              callId,
              timeoutMs: CALL_TIMEOUT_MS,
              ...(typeof approval === 'string' && approval !== '' && approval.length <= 128 ? { approvalId: approval } : {}),
              ...(inputRequestId !== undefined ? { inputRequestId } : {}),
              ...(inputRequestId !== undefined && inputResponses !== undefined && Object.keys(inputResponses).length > 0 ? { inputResponses } : {}),
              ...(Object.keys(answers).length > 0 ? { answers } : {}),
            });
            return callToolResult(result);
          } catch (err) {
            const wire = err instanceof WireError ? err : toWireError(err);
            // Questions the client may answer itself go on to it as input_required (the SDK pushes
            // them as elicitation/create to a 2025 client); the owner's stay a tool result naming them.
            const passed = wire.code === ErrorCodes.inputRequired && wire.details.forPerson === false ? passOnInputRequired(wire) : undefined;
            if (passed !== undefined) {
              outcome = 'input_required';
              return passed;
            }
            outcome = wire.code;
            if (wire.code === ErrorCodes.internal) this.deps.onError(err as Error);
            span.setAttribute('mcpx.error.code', wire.code);
            return errorResult(wire);
          } finally {
            signal.removeEventListener('abort', onAbort);
            const left = this.inflight.get(inflightKey)?.filter((f) => f !== onAbort);
            if (left === undefined || left.length === 0) this.inflight.delete(inflightKey);
            else this.inflight.set(inflightKey, left);
          }
        });
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        span.setAttribute('mcpx.outcome', outcome);
        span.end();
        this.metrics.requests.add(1, { method: 'tools/call', outcome });
        this.metrics.duration.record(performance.now() - started, { outcome });
      }
    });
    return server;
  }
}

/**
 * The proxy's `input_required` (every question addressed to the runtime, i.e. this client) as this
 * endpoint's own `input_required`: the same questions by key, and the input request id as the
 * `requestState` (the server's own state stays sealed in the proxy).
 */
function passOnInputRequired(err: WireError): InputRequiredResult | undefined {
  const id = err.details.inputRequestId;
  const items = err.details.requests;
  if (typeof id !== 'string' || !Array.isArray(items) || items.length === 0) return undefined;
  const inputRequests: Record<string, { method: string; params: Record<string, unknown> }> = {};
  for (const q of items as InputRequestItem[]) {
    if (q.kind === 'form') inputRequests[q.key] = { method: 'elicitation/create', params: { mode: 'form', message: q.message, requestedSchema: q.requestedSchema } };
    else if (q.kind === 'sampling') inputRequests[q.key] = { method: 'sampling/createMessage', params: q.params };
    else return undefined;
  }
  return inputRequired({ inputRequests: inputRequests as Parameters<typeof inputRequired>[0]['inputRequests'], requestState: id });
}
