import { SpanKind, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { ProxyCallRequest } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import type { ServerCredentials } from '@mcpx/stored';
import {
  McpClientError,
  isInputRequired,
  type CallToolOptions,
  type McpCallResult,
  type McpConnection,
} from '@mcpx/mcp-client';
import { McpAttributes, endWithOutcome, traceCarrier } from '@mcpx/telemetry';
import { retryDecision } from './call-decisions.js';
import type { CallTarget } from './call-metrics.js';
import type { ConnectionPool } from './connection-pool.js';
import { declaredFor } from './declared-capabilities.js';
import type { Resumption } from './input-requests.js';
import type { CallChannel, LegacyAsks } from './legacy-inputs.js';
import type { CallLogSink } from './log-relay.js';
import type { OAuthTokens } from './oauth-tokens.js';
import type { CallProgressSink } from './progress-relay.js';
import type { StrictPins } from './strict-pins.js';
import { taskRun } from './tasks/task-calls.js';
import { markResponseCut, sentCall, toWire } from './wire-errors.js';

/** The proxy's parts a call's upstream request uses (of `CallHandlerDeps`). */
export interface UpstreamDeps {
  tracer: Tracer;
  pool: ConnectionPool;
  pins: StrictPins;
  oauth?: OAuthTokens;
  legacyAsks?: LegacyAsks;
  /** A broken response stream of the call was resumed (or not): counted by the handler. */
  resumed(span: Span, server: string, outcome: 'resumed' | 'failed'): void;
}

/** One admitted call as it goes upstream: what it sends, on which connection, under which trace. */
export interface UpstreamCall {
  req: ProxyCallRequest;
  doc: McpToolDocument;
  server: ServerCredentials;
  timeoutMs: number;
  /** The call's controller (the handler aborts it on a cancel): made the upstream request's own, whose timeout aborts it too. */
  controller: AbortController;
  /** The call's trace context (its `proxy.call` span) and span. */
  ctx: Context;
  span: Span;
  target: CallTarget;
  resumption?: Resumption;
  /** A task-augmented call (docs/tasks.md): its id and the task's ttl. */
  task?: { id: string; ttlMs: number };
  progress?: CallProgressSink;
  logs?: CallLogSink;
  /** A legacy server's pushed question goes to this channel (absent: no legacy asks here). */
  channel?: CallChannel;
}

/**
 * The upstream request of one call (built per call by the handler): over the run's pool, checked
 * against a strict pin first, retried once when the answer proves nothing ran (a session expired,
 * or an oauth token refused and refreshed). `era` and `taskTarget` say where it went.
 */
export class UpstreamSend {
  era: McpConnection['era'] | undefined;
  taskTarget: ReturnType<McpConnection['taskTarget']>;
  private params: Parameters<McpConnection['callTool']>[0];
  private readonly attrs: Attributes;
  private readonly tool: NonNullable<CallToolOptions['tool']>;
  private readonly pin: ServerCredentials['pin'];

  constructor(
    private readonly deps: UpstreamDeps,
    private readonly c: UpstreamCall,
  ) {
    const { doc, req, resumption } = c;
    this.pin = c.server.pin;
    this.attrs = {
      'mcp.server': doc.server,
      'mcp.remote_tool': doc.remoteName,
      [McpAttributes.methodName]: 'tools/call',
      [McpAttributes.toolName]: doc.remoteName,
      [McpAttributes.server]: doc.server,
    };
    // The listed definition, so a modern call mirrors its x-mcp-header parameters as Mcp-Param-* headers.
    this.tool = { name: doc.remoteName, inputSchema: doc.inputSchema } as NonNullable<CallToolOptions['tool']>;
    // The answers of the round before, and the server's own state, go back with the retry;
    // the state is the server's, unsealed here, never taken from the caller.
    this.params = { name: doc.remoteName, arguments: req.arguments };
    if (resumption !== undefined) {
      this.params = {
        ...this.params,
        inputResponses: resumption.inputResponses,
        ...(resumption.requestState !== undefined ? { requestState: resumption.requestState } : {}),
      } as typeof this.params;
    }
  }

  /** The credentials the call went out with (refreshed once if its oauth token was refused). */
  get server(): ServerCredentials {
    return this.c.server;
  }

  /** Sends the call again with only the server's `requestState` (an `input_required` round without a question). */
  again(requestState: unknown): Promise<McpCallResult> {
    this.params = { name: this.c.doc.remoteName, arguments: this.c.req.arguments, requestState } as typeof this.params;
    return this.send();
  }

  /** Sends the call over the run's pool; one retry, and only when the answer proves nothing ran (see retryDecision). */
  async send(): Promise<McpCallResult> {
    const { req, doc, task } = this.c;
    const run = task !== undefined ? taskRun(task.id) : req.run;
    const call = (conn: McpConnection) => this.callChecked(conn);
    try {
      return await this.deps.pool.use(req.account, run, doc.server, this.c.server, call, false, this.c.ctx);
    } catch (err) {
      const next = retryDecision({
        code: err instanceof McpClientError ? err.code : undefined,
        cancelled: this.c.controller.signal.aborted,
        refreshable: this.c.server.oauth !== undefined && this.deps.oauth !== undefined,
        attempt: 1,
      });
      if (!next.retry) throw err;
      if (next.reason === 'unauthorized') {
        this.c.span.addEvent('oauth token refused: refreshing once');
        this.c.server = await this.deps.oauth!.refreshed(req.account, doc.server, this.c.server, this.c.ctx);
      } else this.c.span.addEvent('session expired: reconnecting once');
      return await this.deps.pool.use(req.account, run, doc.server, this.c.server, call, true, this.c.ctx);
    }
  }

  /**
   * A strictly pinned server's call goes out only while the server lists the accepted contract
   * on this connection (./strict-pins.ts); other modes go straight out.
   */
  private callChecked(conn: McpConnection): Promise<McpCallResult> {
    this.era = conn.era;
    this.c.target.era = conn.era;
    if (this.c.task !== undefined) this.taskTarget = conn.taskTarget();
    if (this.pin !== 'strict') return this.callOn(conn);
    const { doc, req, ctx } = this.c;
    const checking = this.deps.tracer.startSpan(
      'proxy.pin.check',
      { attributes: { [McpAttributes.toolName]: doc.remoteName, [McpAttributes.server]: doc.server } },
      ctx,
    );
    return this.deps.pins.verify(conn, req.account, doc, this.c.timeoutMs).then(
      () => {
        endWithOutcome(checking);
        return this.callOn(conn);
      },
      (err: unknown) => {
        endWithOutcome(checking, toWire(err).code);
        throw err;
      },
    );
  }

  private callOn(conn: McpConnection): Promise<McpCallResult> {
    const { channel } = this.c;
    const untrack =
      channel !== undefined && conn.era === 'legacy' ? this.deps.legacyAsks?.track(conn, channel) : undefined;
    const out = this.traced(conn, (client) => sentCall(conn.callTool(this.params, this.options(client))));
    if (untrack !== undefined) out.then(untrack, untrack);
    return out;
  }

  private options(client: Span): CallToolOptions {
    const { req, doc, progress, logs, task } = this.c;
    const declared = declaredFor(req);
    return {
      timeoutMs: this.c.timeoutMs,
      controller: this.c.controller,
      tool: this.tool,
      onResume: (outcome) => this.deps.resumed(client, doc.server, outcome),
      // The endpoint's client that declared what it answers is declared as it is (see
      // declaredFor); another caller that shares its roots declares them for this call.
      ...(declared !== undefined
        ? { onlyCapabilities: declared }
        : req.answers?.roots === true
          ? { capabilities: { roots: {} } }
          : {}),
      ...(progress !== undefined ? { onProgress: progress.progress } : {}),
      ...(logs !== undefined ? { logLevel: req.logLevel, onLog: logs.message } : {}),
      ...(task !== undefined ? { task: { ttlMs: task.ttlMs } } : {}),
      // The request joins the upstream span's trace (headers, and a modern request's `_meta`).
      trace: traceCarrier(trace.setSpan(this.c.ctx, client)),
    };
  }

  /**
   * The upstream request's span (`mcp tools/call`, a client span, whose trace context the request
   * carries: {@link options}): the session id of a legacy connection, the protocol
   * version, the outcome (`ok`, `input_required`, or the error's code).
   */
  private async traced(conn: McpConnection, fn: (span: Span) => Promise<McpCallResult>): Promise<McpCallResult> {
    const sessionId = conn.sessionId;
    const { ctx } = this.c;
    const span = this.deps.tracer.startSpan('mcp tools/call', { kind: SpanKind.CLIENT, attributes: this.attrs }, ctx);
    span.setAttribute('mcp.protocol.version', conn.protocolVersion);
    if (sessionId !== undefined) span.setAttribute(McpAttributes.sessionId, sessionId);
    try {
      const result = await fn(span);
      endWithOutcome(span, undefined, isInputRequired(result) ? 'input_required' : 'ok');
      return result;
    } catch (err) {
      markResponseCut(span, err);
      endWithOutcome(span, toWire(err).code);
      throw err;
    }
  }
}
