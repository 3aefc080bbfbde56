import type { Counter, Histogram, Meter, Span, Tracer } from '@opentelemetry/api';
import type { McpToolDocument } from '@mcpx/domain';
import type { ProxyClient, TaskClient } from '@mcpx/proxy-client';
import {
  ProtocolError,
  ProtocolErrorCode,
  type CallToolRequest,
  type CallToolResult,
  type InputRequiredResult,
  type McpHttpHandler,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { withFirstAnswers, type SendCall } from './first-answers.js';
import { callStreams, logLevelOf, registerSetLevel } from './face-logging.js';
import { decodeCursor, encodeCursor, isAnswerMap } from './face-params.js';
import { EndpointTasks } from './endpoint-tasks.js';
import { TaskListens } from './task-listen.js';
import type { TaskStatusRelay } from './task-status.js';
import { TaskAwareServer, asksForTask, declaresTasksExtension, type TaskEra } from './task-wire.js';
import { registerRelayed } from './relayed.js';
import { LIST_HINTS, LIST_TTL_MS, SERVER_NAME, SERVER_OPTIONS, TASK_SERVER_OPTIONS, toTool } from './face-tools.js';
import { registerSubscribe, type LegacySubscriptions } from './legacy-subscriptions.js';
import { FaceHandlers } from './face-handlers.js';
import type { TokenGrant } from './agent-tokens.js';
import { declaresForms, declaresUrl, progressTokenOf, ToolCalls, unknownTool } from './tool-calls.js';
import { goneOf } from './call-input.js';
import { CompactFaces } from './compact-face.js';
import type { AgentToolSet, ToolSets } from './tool-sets.js';
import type { UserApprovals } from './user-approvals.js';
import type { LogLevels } from './log-levels.js';

export { LIST_TTL_MS, SERVER_NAME, toTool } from './face-tools.js';

export interface AgentServerDeps {
  toolSets: ToolSets;
  proxy: ProxyClient;
  tracer: Tracer;
  meter: Meter;
  /** Approvals by the client's user (tokens issued with userMayApprove). */
  approvals: UserApprovals;
  /** Tools per `tools/list` page. */
  pageSize: number;
  /** The log level each token's 2025 client set (`logging/setLevel`; docs/endpoint.md#logging). */
  logLevels: LogLevels;
  version: string;
  /** The proxy's task service: task-augmented calls and `tasks/*` for the clients that declare tasks (absent: none). */
  tasks?: TaskClient;
  /** An unexpected failure; `span`, when given, is the request's (its ids go into the log line). */
  onError: (err: Error, span?: Span) => void;
  /** A 2025 client's `resources/subscribe` (absent: not offered). */
  legacySubscriptions?: LegacySubscriptions;
  /** The task status relay: a 2026-07-28 listen's `taskIds` are heard when given (task-listen.ts). */
  taskStatus?: TaskStatusRelay;
}

interface Metrics {
  requests: Counter;
  duration: Histogram;
  /** Answers a client sent before any question: forwarded to its server's questions, or ignored (first-answers.ts). */
  firstAnswers: Counter;
}

/**
 * One agent's MCP server: `createMcpHandler` (both eras: 2026-07-28 per request, 2025 stateless)
 * over a low-level `Server` per request that lists the agent's tool set and sends each call
 * through the proxy as the token's run, so every rule of the gateway applies (validation with the
 * contract, the grant, approvals, limits, result bounds, tracing). A handler per agent, so that
 * `notify.toolsChanged()` reaches exactly that agent's `subscriptions/listen` streams.
 */
export class AgentServers {
  private readonly handlers: FaceHandlers;
  private readonly metrics: Metrics;
  private readonly info: { name: string; version: string };
  /** `tools/call`, shared with the lean path. */
  readonly calls: ToolCalls;
  /**
   * The grants of the tokens seen lately, by token id: a handler serves an agent, each of its
   * requests names its token (`authInfo.clientId`), whose grant (its rights) the server is made with.
   */
  private readonly grants = new Map<string, TokenGrant>();
  /** The compact face (`?tools=compact`, compact-face.ts): three tools over the same calls. */
  readonly compact: CompactFaces;
  /** Tasks of the clients that declare them (docs/endpoint.md#tasks). */
  private readonly tasks: EndpointTasks | undefined;
  /** A 2026-07-28 listen's `taskIds` (task-listen.ts). */
  private readonly listens: TaskListens | undefined;

  /** The task status relay the endpoint's streams share (2025 GET streams, 2026-07-28 listens). */
  get taskStatus(): TaskStatusRelay | undefined {
    return this.deps.taskStatus;
  }

  constructor(
    private readonly deps: AgentServerDeps,
    private readonly maxHandlers = 10_000,
  ) {
    this.info = { name: SERVER_NAME, version: deps.version };
    this.handlers = new FaceHandlers(deps.toolSets, deps.onError, maxHandlers);
    this.metrics = {
      requests: deps.meter.createCounter('mcpx_endpoint_requests_total', {
        description: 'MCP requests to agent endpoints, by method and outcome',
      }),
      duration: deps.meter.createHistogram('mcpx_endpoint_call_duration_ms', {
        description: 'tools/call through the agent endpoint, end to end (ms)',
        unit: 'ms',
      }),
      firstAnswers: deps.meter.createCounter('mcpx_endpoint_first_answers_total', {
        description: 'tools/call requests that sent answers before any question, by outcome (forwarded, ignored)',
      }),
    };
    this.tasks =
      deps.tasks === undefined
        ? undefined
        : new EndpointTasks({ tasks: deps.tasks, tracer: deps.tracer, requests: this.metrics.requests });
    this.listens =
      this.tasks === undefined || deps.taskStatus === undefined
        ? undefined
        : new TaskListens({
            relay: deps.taskStatus,
            tasks: this.tasks,
            tracer: deps.tracer,
            requests: this.metrics.requests,
            info: this.info,
          });
    this.calls = new ToolCalls({
      ...(this.tasks !== undefined ? { tasks: this.tasks } : {}),
      toolSets: deps.toolSets,
      proxy: deps.proxy,
      tracer: deps.tracer,
      approvals: deps.approvals,
      requests: this.metrics.requests,
      duration: this.metrics.duration,
      onError: deps.onError,
    });
    this.compact = new CompactFaces(
      {
        toolSets: deps.toolSets,
        calls: this.calls,
        tracer: deps.tracer,
        grantOf: (tokenId, fallback) => this.grantOf(tokenId, fallback),
        counted: (method, outcome) => this.counted(method, outcome),
        toTool,
        info: this.info,
        onError: deps.onError,
      },
      maxHandlers,
    );
  }

  /** A token id's remembered grant; one not remembered (dropped past the cap meanwhile) has no rights beyond the call. */
  grantOf(tokenId: string | undefined, fallback: TokenGrant): TokenGrant {
    return this.grants.get(tokenId ?? '') ?? { ...fallback, id: tokenId ?? 'unknown', userMayApprove: false };
  }

  /** The log level each token's 2025 client set (the lean path leaves a call of such a token to the SDK's, which streams). */
  get logLevels(): LogLevels {
    return this.deps.logLevels;
  }

  /** Counts a request answered (a method other than tools/call, e.g. by the lean path). */
  counted(method: string, outcome: string): void {
    this.metrics.requests.add(1, { method, outcome });
  }

  private remember(grant: TokenGrant): void {
    if (this.grants.get(grant.id) === grant) return;
    this.grants.delete(grant.id);
    this.grants.set(grant.id, grant);
    if (this.grants.size > this.maxHandlers * 4) this.grants.delete(this.grants.keys().next().value as string);
  }

  /** Counts a request refused before any MCP handling (host, origin, token). */
  refused(reason: string): void {
    this.metrics.requests.add(1, { method: 'http', outcome: reason });
  }

  /**
   * The handler of the token's agent (made on first use, the oldest dropped past the cap): the
   * merged face, the compact face (over the merged set), or one server's face (`server`).
   */
  handlerFor(grant: TokenGrant, face: 'full' | 'compact' = 'full', server?: string): McpHttpHandler {
    this.remember(grant);
    if (face === 'compact' && server === undefined) return this.compact.handlerFor(grant);
    // The per-server face of one server has a handler of its own (its own names, its own streams).
    const key =
      server === undefined ? `${grant.account}:${grant.agent}` : `${grant.account}:${grant.agent}\u0000${server}`;
    const make = (clientId: string | undefined): Server => this.server(this.grantOf(clientId, grant), server);
    const listens = this.listens;
    const wrap =
      listens === undefined
        ? undefined
        : (h: McpHttpHandler) => listens.wrap(h, server, (id) => this.grantOf(id, grant));
    return this.handlers.get(key, grant.account, grant.agent, make, server, wrap);
  }

  async close(): Promise<void> {
    await Promise.all([this.handlers.close(), this.compact.close()]);
  }

  private async toolSet(account: string, agent: string): Promise<AgentToolSet> {
    const set = await this.deps.toolSets.get(account, agent);
    // The token's agent was deleted since the token was read.
    if (set === null) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'the agent no longer exists');
    return set;
  }

  /**
   * The tools a face serves, sorted by the names it lists them under, and the document of a name
   * as it lists it: the whole set (merged names), or one server's tools (their own names).
   */
  private async faceTools(
    account: string,
    agent: string,
    face: string | undefined,
  ): Promise<{
    tools: McpToolDocument[];
    listed: (doc: McpToolDocument) => string;
    find: (name: string) => McpToolDocument | undefined;
  }> {
    const set = await this.toolSet(account, agent);
    if (face === undefined) return { tools: set.tools, listed: (d) => d.name, find: (n) => set.byName.get(n) };
    // A grant revoked since the request was admitted: the face serves nothing.
    const own = set.granted.has(face) ? set.byServer.get(face) : undefined;
    return { tools: own?.tools ?? [], listed: (d) => d.remoteName, find: (n) => own?.byRemote.get(n) };
  }

  /**
   * The dialect of a `tools/call` that asks for a task of a tool that has task support: a 2025
   * call with `params.task`, a 2026-07-28 one whose client declared the tasks extension.
   */
  private async taskAsked(
    server: Server,
    params: { name: string },
    caps: unknown,
    account: string,
    agent: string,
    face: string | undefined,
  ): Promise<TaskEra | undefined> {
    const era: TaskEra = (server.getNegotiatedProtocolVersion() ?? '') >= '2026-07-28' ? 'modern' : 'legacy';
    if (!(era === 'modern' ? declaresTasksExtension(caps) : asksForTask(params))) return undefined;
    const doc = (await this.faceTools(account, agent, face)).find(params.name);
    return doc?.taskSupport === undefined ? undefined : era;
  }

  /**
   * The per-request server of a token's request (its calls go in the run `ep-<token id>`), on the
   * merged face or on the per-server face of `face`.
   */
  private server(grant: TokenGrant, face?: string): Server {
    const { account, agent } = grant;
    // (A server per request is what the stateless serving asks for; what does not depend on the
    // request is made once: the info, the capabilities.)
    const server = new TaskAwareServer(this.info, this.tasks === undefined ? SERVER_OPTIONS : TASK_SERVER_OPTIONS);
    this.tasks?.register(server, grant);
    // Resources, templates, prompts and completions of the granted servers, through the proxy.
    registerRelayed(server, grant, face, {
      toolSets: this.deps.toolSets,
      proxy: this.deps.proxy,
      tracer: this.deps.tracer,
      requests: this.metrics.requests,
      hints: LIST_HINTS,
    });
    if (this.deps.legacySubscriptions !== undefined)
      registerSubscribe(server, grant, face, this.deps.legacySubscriptions, (method, outcome) =>
        this.counted(method, outcome),
      );
    server.setRequestHandler('tools/list', async (request) => {
      const { tools, listed } = await this.faceTools(account, agent, face);
      const cursor = request.params?.cursor;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const start = after === undefined ? 0 : tools.findIndex((t) => listed(t) > after);
      const page = start < 0 ? [] : tools.slice(start, start + this.deps.pageSize);
      const last = page.at(-1);
      const more = start >= 0 && start + this.deps.pageSize < tools.length && last !== undefined;
      this.metrics.requests.add(1, { method: 'tools/list', outcome: 'ok' });
      return {
        tools: page.map((d) => toTool(d, face !== undefined)),
        ttlMs: LIST_TTL_MS,
        cacheScope: 'private' as const,
        ...(more ? { nextCursor: encodeCursor(listed(last)) } : {}),
      };
    });
    registerSetLevel(server, grant, this.deps.tracer, this.deps.logLevels, (m, o) => this.counted(m, o));
    // A 2025 client's cancel of a call that another request (instance) serves.
    server.setNotificationHandler('notifications/cancelled', (notification) => {
      this.calls.cancelled(grant, (notification.params as { requestId?: unknown } | undefined)?.requestId);
    });
    server.setRequestHandler('tools/call', (request, ctx) => this.toolsCall(server, grant, face, request, ctx));
    return server;
  }

  /** A face's `tools/call` (the SDK path; lean-calls.ts serves the plain ones beside it). */
  private async toolsCall(
    server: Server,
    grant: TokenGrant,
    face: string | undefined,
    request: CallToolRequest,
    ctx: ServerContext,
  ): Promise<CallToolResult | InputRequiredResult> {
    const { account, agent } = grant;
    const params = request.params;
    // A retry's answers are a map of objects by request key; anything else (null, a number) is
    // a protocol error, refused before the proxy is asked.
    const answers =
      'inputResponses' in params
        ? (params as { inputResponses?: unknown }).inputResponses
        : (ctx.mcpReq.inputResponses as unknown);
    if (answers !== undefined && !isAnswerMap(answers))
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'inputResponses: must be a map of answers (objects) by request key',
      );
    const mcpReq = ctx.mcpReq;
    // What this client can answer itself, as it declared: forms (elicitation) and sampling (the
    // server backfills a 2026-07-28 request's from its envelope).
    const caps = server.getClientCapabilities() ?? {};
    const meta = ctx.mcpReq._meta ?? params._meta;
    const progressToken = progressTokenOf(meta);
    const logLevel = await logLevelOf(
      this.deps.logLevels,
      grant,
      (ctx.mcpReq as { envelope?: Record<string, unknown> }).envelope,
    );
    // On a per-server face the tool is named by its server: the call is that of its document.
    let name = params.name;
    if (face !== undefined) {
      const doc = (await this.faceTools(account, agent, face)).find(params.name);
      if (doc === undefined) {
        this.metrics.requests.add(1, { method: 'tools/call', outcome: 'unknown_tool' });
        throw unknownTool(params.name);
      }
      name = doc.name;
    }
    const task =
      this.tasks === undefined ? undefined : await this.taskAsked(server, params, caps, account, agent, face);
    // Answers sent before any question go to the server only as answers to its questions of this client (first-answers.ts).
    const send: SendCall = (retry) =>
      this.calls.call({
        grant,
        name,
        arguments: params.arguments ?? {},
        meta,
        headers: {
          traceparent: ctx.http?.req?.headers.get('traceparent'),
          tracestate: ctx.http?.req?.headers.get('tracestate'),
        },
        requestState: retry?.requestState ?? mcpReq.requestState?.(),
        ...(retry !== undefined
          ? { inputResponses: retry.inputResponses }
          : mcpReq.inputResponses !== undefined
            ? { inputResponses: mcpReq.inputResponses }
            : {}),
        caps: {
          elicitation: declaresForms(caps.elicitation),
          elicitationUrl: declaresUrl(caps.elicitation),
          sampling: caps.sampling !== undefined,
          roots: caps.roots !== undefined,
        },
        requestId: ctx.mcpReq.id,
        gone: goneOf(ctx.mcpReq.signal),
        path: 'sdk',
        ...(task !== undefined ? { task } : {}),
        ...callStreams(ctx, progressToken, logLevel),
      });
    const first = answers as Record<string, unknown> | undefined;
    return withFirstAnswers(send, first, mcpReq.requestState?.(), meta, this.metrics.firstAnswers);
  }
}
