import {
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Meter,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { ErrorCodes, MAX_CALL_TIMEOUT_MS, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import {
  TEXT_LIMIT_BYTES,
  flattenCallResult,
  isErrorResult,
  type ContentLimits,
  type FlattenLimits,
  type McpToolDocument,
  type ProxyResult,
} from '@mcpx/domain';
import type { CallLimiter, CallLimits } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import {
  McpClientError,
  isInputRequired,
  type CallToolOptions,
  type CreateMessageResult,
  type ElicitResult,
  type McpCallResult,
  type McpConnection,
} from '@mcpx/mcp-client';
import { McpAttributes, endWithOutcome } from '@mcpx/telemetry';
import { argumentsHash, type ApprovalGate } from './approval-gate.js';
import { approvalStep, limitRefusal, limitRefusalKind, retryDecision } from './call-decisions.js';
import type { Catalog } from './catalog.js';
import type { ConnectionPool } from './connection-pool.js';
import { declaredFor } from './declared-capabilities.js';
import { inputRoundOf, type InputGate, type Resumption } from './input-requests.js';
import { CallChannel, raceQuestion, type LegacyAsks, type PushedQuestion } from './legacy-inputs.js';
import { CallMetrics, type CallTarget } from './call-metrics.js';
import type { ProgressRelay } from './progress-relay.js';
import type { LogRelay } from './log-relay.js';
import type { ActivityRecorder } from './activity-recorder.js';
import type { OAuthTokens } from './oauth-tokens.js';
import { missingToolError, unlistedToolError } from './held-tools.js';
import { StrictPins } from './strict-pins.js';
import { beforeSend, sentCall, toWire } from './wire-errors.js';
import { contentReplyLimits, structuredFault, wholeCallResult } from './whole-result.js';
import { authContextOf } from './era-verdicts.js';
import { newTaskId, taskRun, type TaskCalls } from './tasks/task-calls.js';

export { toWire } from './wire-errors.js';

export interface ReplyLimits {
  flatten: Partial<FlattenLimits>;
  /** JSON bytes of `result` (structuredContent) passed on; a bigger one is replaced by a marker in `text`. */
  resultBytes: number;
  /** Whole content (a call with `content: true`), within the same payload. */
  content?: Partial<ContentLimits>;
}

/**
 * Bounds that keep a reply within NATS' max payload: text at 256 KiB (docs/limits.md#the-call), structured
 * content at 256 KiB of JSON, images within what is left (base64 is 4/3 of the bytes).
 */
export function replyLimits(maxPayload: number): ReplyLimits {
  const resultBytes = 256 * 1024;
  const left = Math.max(0, maxPayload - TEXT_LIMIT_BYTES - resultBytes - 64 * 1024);
  const images = Math.floor((left * 3) / 4);
  return {
    flatten: { imageBytes: images, imagesTotalBytes: images },
    resultBytes,
    content: contentReplyLimits(maxPayload, resultBytes),
  };
}

export interface CallHandlerDeps {
  catalog: Catalog;
  pool: ConnectionPool;
  tracer: Tracer;
  meter: Meter;
  /** From the NATS connection's max payload: see {@link replyLimits}. */
  replyLimits?: ReplyLimits;
  /** Per-(account, server) protection shared across instances; absent = none. */
  limiter?: CallLimiter;
  limits?: CallLimits;
  /** Names this instance in concurrency leases. */
  instance?: string;
  /** Stops `always_ask` calls for a human; absent, such calls are refused (never run unasked). */
  approvals?: ApprovalGate;
  /** Refreshes oauth servers' tokens through the registry; absent, a refused token is `auth_required`. */
  oauth?: OAuthTokens;
  /** Servers' questions (`input_required`) to a person or the runtime; absent, such a call fails with a typed error. */
  inputs?: InputGate;
  /** Legacy servers' pushed `elicitation/create`, held while a person answers (absent: such a question is refused). */
  legacyAsks?: LegacyAsks;
  /** Strict pinning's check before a call goes out (default: a new one). */
  pins?: StrictPins;
  /** Where a call's unexpected fault (answered `internal`) is logged: never swallowed. */
  log?: Logger;
  /** Relays the server's progress of a call sent with `progress: true` (absent: such a call runs without it). */
  progress?: ProgressRelay;
  /** Relays the server's log messages of a call sent with a `logLevel` (absent: such a call runs without them). */
  logs?: LogRelay;
  /** The call log (docs/activity.md): each call's metadata, held and written off the call path (absent: not recorded). */
  activity?: ActivityRecorder;
  /** Brokers task-augmented calls (docs/tasks.md); absent, a tool's task support is not used. */
  tasks?: TaskCalls;
}

/**
 * Executes `call` for an mcp tool document: validate the arguments against the contract, check
 * the grant itself, admit the call under the server's limits, call over the run's pool, flatten
 * the result.
 */
export class CallHandler {
  private readonly inflight = new Map<string, AbortController>();
  /** Every call between its arrival and its reply (`inflight` holds only those past admission). */
  private readonly held = new Set<string>();
  private readonly calls: Counter;
  private readonly duration: Histogram;
  private readonly byCode = new Map<string, number>();
  private readonly resumptions: Counter;
  /** By server, tool and outcome; errors by code (bounded labels: see `CALL_LABEL_LIMITS`). */
  private readonly metrics: CallMetrics;
  private readonly rejections: Counter;
  private readonly resumed = { resumed: 0, failed: 0 };
  private total = 0;
  private readonly pins: StrictPins;

  constructor(private readonly deps: CallHandlerDeps) {
    this.pins = deps.pins ?? new StrictPins(deps.meter);
    this.calls = deps.meter.createCounter('mcpx_proxy_calls_total', { description: 'Calls by result code' });
    this.resumptions = deps.meter.createCounter('mcpx_proxy_stream_resumptions_total', {
      description: 'Broken tools/call response streams resumed with Last-Event-ID, by outcome',
    });
    this.duration = deps.meter.createHistogram('mcpx_proxy_call_duration_ms', {
      unit: 'ms',
      description: 'Call time, end to end in the proxy',
    });
    this.metrics = new CallMetrics(deps.meter);
    this.rejections = deps.meter.createCounter('mcpx_quota_rejections_total', {
      description: 'Requests refused by a quota or rate limit, by kind',
    });
  }

  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Calls between their arrival and their reply's hand-off (0: none is being worked on). */
  get heldCount(): number {
    return this.held.size;
  }

  /** Calls handled, and their results by code (`ok` or an error code), for the service's stats. */
  get counts(): { calls: number; results: Record<string, number>; resumptions: { resumed: number; failed: number } } {
    return { calls: this.total, results: Object.fromEntries(this.byCode), resumptions: { ...this.resumed } };
  }

  /** Aborts an in-flight call of a run (`mcp.proxy.cancel`); false when there is none. */
  cancel(account: string, run: string, callId: string): boolean {
    const ctl = this.inflight.get(`${account}:${run}:${callId}`);
    ctl?.abort();
    return ctl !== undefined;
  }

  /** Whether this instance is working on the call (`mcp.proxy.calls.held`: a caller checking its proxy is alive). */
  holds(account: string, run: string, callId: string): boolean {
    return this.held.has(`${account}:${run}:${callId}`);
  }

  /** Runs one call in the trace context `parent` (from the request's headers). */
  async handle(req: ProxyCallRequest, parent: Context): Promise<ProxyResult> {
    const started = performance.now();
    const key = `${req.account}:${req.run}:${req.callId}`;
    this.held.add(key);
    // The call's span (MCP and GenAI semantic conventions), and its steps' spans below:
    // `proxy.validate`, `proxy.grant`, `proxy.approval` (an always_ask tool), `proxy.pool.acquire`
    // (when the call waits for a connection: a handshake, or another call's), `mcp tools/call`
    // (the upstream request). Names, ids, codes and counts only: never an argument value.
    const span = this.deps.tracer.startSpan(
      'proxy.call',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'mcp.account': req.account,
          'mcpx.agent': req.agent,
          'mcpx.run': req.run,
          'mcp.tool': req.tool,
          [McpAttributes.methodName]: 'tools/call',
          [McpAttributes.toolName]: req.tool,
        },
      },
      parent,
    );
    let code = 'ok';
    const target: CallTarget = {};
    const ctx = trace.setSpan(parent, span);
    try {
      const result = await context.with(ctx, () => this.execute(req, key, started, span, target, ctx));
      // A server's error passed on whole (`content`) is counted as the server_error it is for the runtime.
      if (result.isError === true) code = ErrorCodes.serverError;
      return result;
    } catch (err) {
      const wire = toWire(err);
      code = wire.code;
      // A fault of ours: the caller sees only `internal`; the operator sees what it was.
      if (wire.code === ErrorCodes.internal)
        this.deps.log?.error('a call failed with an unexpected error', { tool: req.tool, err: err as Error });
      span.setStatus({ code: SpanStatusCode.ERROR, message: wire.message });
      span.setAttributes({ 'mcpx.error_code': wire.code, [McpAttributes.errorCode]: wire.code });
      throw wire;
    } finally {
      this.held.delete(key);
      span.setAttribute(McpAttributes.outcome, code);
      span.end();
      const ms = performance.now() - started;
      this.count(code, ms, target);
      this.deps.activity?.record(req, target, code, ms);
    }
  }

  private resumedStream(span: Span, server: string, outcome: 'resumed' | 'failed'): void {
    span.addEvent('response stream broke: resumed with Last-Event-ID', { 'mcpx.outcome': outcome });
    this.resumptions.add(1, { outcome, 'mcp.server': server });
    this.resumed[outcome]++;
  }

  /** Counts a call refused before it reached {@link handle} (a malformed request). */
  count(code: string, ms = 0, target: CallTarget = {}): void {
    this.metrics.record(target, code, ms);
    this.total++;
    this.byCode.set(code, (this.byCode.get(code) ?? 0) + 1);
    const attrs = { code };
    this.calls.add(1, attrs);
    this.duration.record(ms, attrs);
  }

  /** A step of the call: a child span of the call's (see {@link handle}), ended with {@link endWithOutcome}. */
  private step(ctx: Context, name: string, attributes: Attributes): Span {
    return this.deps.tracer.startSpan(name, { attributes }, ctx);
  }

  /** `key` names the call (`<account>:<run>:<callId>`) in `inflight` and in its concurrency lease. */
  private async execute(
    req: ProxyCallRequest,
    key: string,
    started: number,
    span: Span,
    target: CallTarget,
    ctx: Context,
  ): Promise<ProxyResult> {
    const { catalog } = this.deps;
    const agent = catalog.agentNow(req.account, req.agent) ?? (await catalog.agent(req.account, req.agent));
    if (agent === null) throw new WireError(ErrorCodes.notFound, 'this account has no such agent', { field: 'agent' });
    const cid = agent.tools.get(req.tool);
    if (cid === undefined) throw await missingToolError(catalog, req, agent.grants);
    const entry = catalog.documentNow(req.account, cid) ?? (await catalog.document(req.account, cid));
    // The registry no longer lists the tool: withheld a moment ago (say so), or gone.
    if (entry === null) throw await unlistedToolError(catalog, req, cid);
    const { doc } = entry;
    // The metrics' labels: names from the registry's document, never from the request.
    target.server = doc.server;
    target.tool = doc.remoteName;
    const validating = this.step(ctx, 'proxy.validate', {
      [McpAttributes.toolName]: doc.remoteName,
      [McpAttributes.server]: doc.server,
    });
    const check = entry.validate(req.arguments);
    // Names and flags only, never a value: a default filled, a part past the validator's bounds let through.
    if (check.ok) {
      validating.setAttributes({
        'mcpx.arguments.filled': check.filled !== undefined,
        'mcpx.validation.partial': check.partial !== undefined,
      });
      this.metrics.validated(target, check);
    }
    endWithOutcome(validating, check.ok ? undefined : ErrorCodes.invalidArguments);
    if (!check.ok) {
      // Touch-expand: a miss answers with the real contract, and nothing is called.
      throw new WireError(
        ErrorCodes.invalidArguments,
        `arguments do not match ${doc.name}: ${check.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`,
        {
          errors: check.errors,
          contract: { name: doc.name, description: doc.description, inputSchema: doc.inputSchema },
        },
      );
    }
    // The defaults the server would fill itself are filled here: from now on the call is these
    // arguments, so what a person approves, what an approval or input request is bound to, and
    // what is sent are one value.
    if (check.filled !== undefined) req = { ...req, arguments: check.filled };
    // The projection is a cache of the grant, never the authority.
    const granting = this.step(ctx, 'proxy.grant', { [McpAttributes.server]: doc.server });
    const granted = agent.grants.has(doc.server);
    endWithOutcome(granting, granted ? undefined : ErrorCodes.notGranted);
    if (!granted)
      throw new WireError(ErrorCodes.notGranted, `the agent is not granted the ${doc.server} MCP server`, {
        server: doc.server,
      });
    // A call re-sent with the answers to its server's questions: the input request is used once,
    // for this agent, run, tool and arguments only. A call that passed its approval before it was
    // asked needs none again.
    let resumption: Resumption | undefined;
    if (req.inputRequestId !== undefined) {
      if (this.deps.inputs === undefined)
        throw new WireError(ErrorCodes.inputRefused, 'input requests are not available here', {
          reason: 'unknown',
          tool: doc.name,
        });
      resumption = await this.deps.inputs.resume(req, doc, argumentsHash(req.arguments)).catch((err: unknown) => {
        throw beforeSend(err);
      });
      span.setAttribute('mcpx.input_round', resumption.round);
      span.addEvent('input request answered: resuming the call', { 'mcpx.input_request': req.inputRequestId });
    }
    let approved = resumption?.approved ?? false;
    const approval = approvalStep(doc.permission, approved, this.deps.approvals !== undefined);
    if (approval === 'unavailable')
      throw new WireError(
        ErrorCodes.approvalRequired,
        `${doc.name} needs a human's approval, and approvals are not available here`,
        { tool: doc.name },
      );
    if (approval === 'gate') {
      const approving = this.step(ctx, 'proxy.approval', {
        [McpAttributes.toolName]: doc.remoteName,
        [McpAttributes.server]: doc.server,
      });
      try {
        await context.with(trace.setSpan(ctx, approving), () => this.deps.approvals!.admit(req, doc));
        endWithOutcome(approving, undefined, 'approved');
      } catch (err) {
        const wire = beforeSend(err);
        endWithOutcome(approving, toWire(wire).code);
        throw wire;
      }
      span.setAttribute('mcpx.approved', true);
      approved = true;
    }
    // A legacy server that pushed its question is still holding its request: the answer goes to it.
    if (resumption?.record.era === 'legacy') target.era = 'legacy';
    if (resumption?.record.era === 'legacy')
      return await this.resumeParked(
        req,
        doc,
        resumption,
        { formsByRuntime: agent.formsByRuntime === true, approved },
        started,
        span,
      );
    // The warm entry without an await; its pin mode is part of it (read with its credentials).
    let server =
      this.deps.catalog.serverNow(req.account, doc.server) ?? (await this.deps.catalog.server(req.account, doc.server));
    if (server === null)
      throw new WireError(ErrorCodes.notFound, `no MCP server named ${doc.server}`, { server: doc.server });
    const pin = server.pin;
    if (server.oauth !== undefined && this.deps.oauth?.expiring(server))
      server = await this.deps.oauth.refreshed(req.account, doc.server, server);
    span.setAttribute('mcp.server', doc.server);
    const timeoutMs = Math.min(req.timeoutMs ?? MAX_CALL_TIMEOUT_MS, MAX_CALL_TIMEOUT_MS);

    const { limiter, limits } = this.deps;
    let release: (() => void) | undefined;
    if (limiter !== undefined && limits !== undefined) {
      const admitted = limiter.admit(
        `${req.account}:${doc.server}`,
        limits,
        `${this.deps.instance ?? 'proxy'}:${key}`,
        timeoutMs + 30_000,
      );
      // Usually answered from what this instance holds, without a round trip (or an await).
      const admission = admitted instanceof Promise ? await admitted : admitted;
      if (!admission.ok) {
        this.rejections.add(1, { kind: limitRefusalKind(admission) });
        throw limitRefusal(doc.server, limits, admission);
      }
      release = admission.release;
    }

    // A task-augmented call (docs/tasks.md): refused past the account's running-tasks cap before
    // it is sent, and sent on a pool run of its own (a legacy task lives in its session).
    const tasks = this.deps.tasks;
    const taskId = tasks !== undefined && tasks.wanted(doc, req) ? newTaskId() : undefined;
    if (taskId !== undefined) {
      await tasks!.admit(req.account);
      span.setAttribute('mcpx.task', taskId);
    }
    let taskTarget: ReturnType<McpConnection['taskTarget']>;

    const ctl = new AbortController();
    this.inflight.set(key, ctl);
    const progress = req.progress === true ? this.deps.progress?.open(req, span) : undefined;
    const logs = req.logLevel !== undefined ? this.deps.logs?.open(req, req.logLevel, span) : undefined;
    // Set once a legacy call is held for a person: its lease and its place in flight end with the server's call.
    let parkedOut = false;
    try {
      const attrs: Attributes = {
        'mcp.server': doc.server,
        'mcp.remote_tool': doc.remoteName,
        [McpAttributes.methodName]: 'tools/call',
        [McpAttributes.toolName]: doc.remoteName,
        [McpAttributes.server]: doc.server,
      };
      // The listed definition, so a modern call mirrors its x-mcp-header parameters as Mcp-Param-* headers.
      const tool = { name: doc.remoteName, inputSchema: doc.inputSchema } as NonNullable<CallToolOptions['tool']>;
      // The answers of the round before, and the server's own state, go back with the retry;
      // the state is the server's, unsealed here, never taken from the caller.
      let params: Parameters<McpConnection['callTool']>[0] = { name: doc.remoteName, arguments: req.arguments };
      if (resumption !== undefined) {
        params = {
          ...params,
          inputResponses: resumption.inputResponses,
          ...(resumption.requestState !== undefined ? { requestState: resumption.requestState } : {}),
        } as typeof params;
      }
      const declared = declaredFor(req);
      // A legacy server may push a question during the call: it is routed to this call's channel.
      const channel = this.deps.legacyAsks !== undefined ? new CallChannel() : undefined;
      // The era of the connection the call went out on (set at once when the run's connection was ready).
      let era: McpConnection['era'] | undefined;
      const callOn = (conn: McpConnection) => {
        const untrack =
          channel !== undefined && conn.era === 'legacy' ? this.deps.legacyAsks!.track(conn, channel) : undefined;
        const out = this.upstreamCall(ctx, attrs, conn, (client) =>
          sentCall(
            conn.callTool(params, {
              timeoutMs,
              signal: ctl.signal,
              tool,
              onResume: (outcome) => this.resumedStream(client, doc.server, outcome),
              // The endpoint's client that declared what it answers is declared as it is (see
              // declaredFor); another caller that shares its roots declares them for this call.
              ...(declared !== undefined
                ? { onlyCapabilities: declared }
                : req.answers?.roots === true
                  ? { capabilities: { roots: {} } }
                  : {}),
              ...(progress !== undefined ? { onProgress: progress.progress } : {}),
              ...(logs !== undefined ? { logLevel: req.logLevel, onLog: logs.message } : {}),
              ...(taskId !== undefined ? { task: { ttlMs: tasks!.maxTtlMs } } : {}),
            }),
          ),
        );
        if (untrack !== undefined) out.then(untrack, untrack);
        return out;
      };
      // A strictly pinned server's call goes out only while the server lists the accepted contract
      // on this connection (./strict-pins.ts); other modes go straight out.
      const call = (conn: McpConnection) => {
        era = conn.era;
        target.era = conn.era;
        if (taskId !== undefined) taskTarget = conn.taskTarget();
        if (pin !== 'strict') return callOn(conn);
        const checking = this.step(ctx, 'proxy.pin.check', {
          [McpAttributes.toolName]: doc.remoteName,
          [McpAttributes.server]: doc.server,
        });
        return this.pins.verify(conn, req.account, doc, timeoutMs).then(
          () => {
            endWithOutcome(checking);
            return callOn(conn);
          },
          (err: unknown) => {
            endWithOutcome(checking, toWire(err).code);
            throw err;
          },
        );
      };
      const send = async (): Promise<Awaited<ReturnType<McpConnection['callTool']>>> => {
        try {
          return await this.deps.pool.use(
            req.account,
            taskId !== undefined ? taskRun(taskId) : req.run,
            doc.server,
            server!,
            call,
            false,
            ctx,
          );
        } catch (err) {
          // One retry, and only when the answer proves nothing ran (see retryDecision).
          const next = retryDecision({
            code: err instanceof McpClientError ? err.code : undefined,
            cancelled: ctl.signal.aborted,
            refreshable: server!.oauth !== undefined && this.deps.oauth !== undefined,
            attempt: 1,
          });
          if (!next.retry) throw err;
          if (next.reason === 'unauthorized') {
            span.addEvent('oauth token refused: refreshing once');
            server = await this.deps.oauth!.refreshed(req.account, doc.server, server!);
          } else span.addEvent('session expired: reconnecting once');
          return await this.deps.pool.use(
            req.account,
            taskId !== undefined ? taskRun(taskId) : req.run,
            doc.server,
            server!,
            call,
            true,
            ctx,
          );
        }
      };
      const pending = send();
      // A modern server asks with input_required in its result, never mid-call: no question to race.
      let result =
        channel === undefined || era === 'modern'
          ? await pending
          : await this.untilQuestion(
              req,
              doc,
              pending,
              channel,
              { formsByRuntime: agent.formsByRuntime === true, approved, round: (resumption?.round ?? 0) + 1 },
              () => {
                parkedOut = true;
                const done = (): void => {
                  this.inflight.delete(key);
                  release?.();
                };
                pending.then(done, done);
              },
            );
      if (taskId !== undefined) {
        const brokered = await tasks!.brokered({
          req,
          doc,
          taskId,
          result,
          era: era ?? 'legacy',
          target: taskTarget,
          authContext: authContextOf(server.url, server.headers),
          formsByRuntime: agent.formsByRuntime === true,
          started,
          remainingMs: Math.min(timeoutMs - (performance.now() - started), req.taskWaitMs ?? MAX_CALL_TIMEOUT_MS),
        });
        if (brokered !== undefined) return brokered;
        void this.deps.pool.endRun(req.account, taskRun(taskId)); // answered at once: its task's run holds nothing
      }
      // An input request (2026-07-28 `input_required`) is no result: the questions are recorded
      // and the call stops with `input_required` (a round with only a `requestState` and no
      // question is sent straight back, a bounded number of times).
      for (let hops = 0; isInputRequired(result); hops++) {
        const round = inputRoundOf(result);
        if (this.deps.inputs === undefined) {
          throw new WireError(
            ErrorCodes.inputRefused,
            `${doc.name} asks for input before it can finish, and input requests are not available here`,
            {
              reason: 'unavailable',
              tool: doc.name,
              server: doc.server,
            },
          );
        }
        if (Object.keys(round.inputRequests).length === 0 && round.requestState !== undefined && hops < 8) {
          params = {
            name: doc.remoteName,
            arguments: req.arguments,
            requestState: round.requestState,
          } as typeof params;
          span.addEvent('input_required with state only: sent straight back');
          result = await send();
          continue;
        }
        if (Object.keys(round.inputRequests).length === 0)
          throw new WireError(
            ErrorCodes.serverError,
            `the ${doc.server} MCP server answered input_required with no question`,
            { server: doc.server, tool: doc.name },
          );
        const items = this.deps.inputs.classify(req, doc, round.inputRequests, agent.formsByRuntime === true);
        span.addEvent('input requested', { 'mcpx.input_questions': items.length });
        await this.deps.inputs.stop(req, doc, items, {
          argsHash: argumentsHash(req.arguments),
          round: (resumption?.round ?? 0) + 1,
          approved,
          era: 'modern',
          ...(round.requestState !== undefined ? { requestState: round.requestState } : {}),
        });
      }
      return this.finish(doc, req, result, started);
    } finally {
      progress?.close();
      logs?.close();
      if (!parkedOut) {
        this.inflight.delete(key);
        release?.();
      }
    }
  }

  /**
   * The upstream request's span (`mcp tools/call`, a client span, active while it runs so the
   * request carries its trace context): the session id of a legacy connection, the protocol
   * version, the outcome (`ok`, `input_required`, or the error's code).
   */
  private async upstreamCall(
    ctx: Context,
    attrs: Attributes,
    conn: McpConnection,
    fn: (span: Span) => Promise<McpCallResult>,
  ): Promise<McpCallResult> {
    const sessionId = conn.sessionId;
    const span = this.deps.tracer.startSpan('mcp tools/call', { kind: SpanKind.CLIENT, attributes: attrs }, ctx);
    span.setAttribute('mcp.protocol.version', conn.protocolVersion);
    if (sessionId !== undefined) span.setAttribute(McpAttributes.sessionId, sessionId);
    try {
      const result = await context.with(trace.setSpan(ctx, span), () => fn(span));
      endWithOutcome(span, undefined, isInputRequired(result) ? 'input_required' : 'ok');
      return result;
    } catch (err) {
      endWithOutcome(span, toWire(err).code);
      throw err;
    }
  }

  /**
   * A complete result as the runtime shows it (an `isError` one is the server's error), or whole
   * for a caller that asked so (`content`: `./whole-result.ts`), within the reply's bounds.
   */
  private finish(doc: McpToolDocument, req: ProxyCallRequest, result: McpCallResult, started: number): ProxyResult {
    if (req.content === true)
      return wholeCallResult(doc, req, result, Math.round(performance.now() - started), this.deps.replyLimits);
    const errorText = isErrorResult(result);
    if (errorText !== undefined)
      throw new WireError(ErrorCodes.serverError, errorText || `${doc.name} reported an error`, { server: doc.server });
    const bounds = this.deps.replyLimits;
    const flat = flattenCallResult(
      {
        tool: doc.name,
        server: doc.server,
        remoteName: doc.remoteName,
        arguments: req.arguments,
        result,
        durationMs: Math.round(performance.now() - started),
      },
      bounds?.flatten,
    );
    // Left out with a line that says so; the call ran, so its text still goes.
    const fault = structuredFault(flat.result, bounds?.resultBytes);
    if (fault !== undefined) {
      delete flat.result;
      flat.text = flat.text === undefined ? fault.text : `${flat.text}\n${fault.text}`;
    }
    return flat;
  }

  /**
   * A legacy call's result, unless its server pushes a question first: then the question is recorded
   * as an input request, the server's request is held (`onParked`) and the call stops with
   * `input_required`. A question that cannot be shown or recorded is refused to the server (a
   * sampling request when the runtime does not sample: the caller gets `input_refused`
   * `sampling_unsupported`, as from a modern server).
   */
  private async untilQuestion(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    pending: Promise<McpCallResult>,
    channel: CallChannel,
    ctx: { formsByRuntime: boolean; approved: boolean; round: number },
    onParked: () => void,
  ): Promise<McpCallResult> {
    const raced = await raceQuestion(pending, channel);
    if (raced.kind === 'result') return raced.result;
    const { question } = raced;
    const { inputs, legacyAsks } = this.deps;
    const refuse = (err: unknown, why: string): never => {
      question.refuse(new Error(why));
      pending.catch(() => undefined);
      throw err;
    };
    if (inputs === undefined || legacyAsks === undefined) {
      return refuse(
        new WireError(
          ErrorCodes.inputRefused,
          `${doc.name} asks for input before it can finish, and input requests are not available here`,
          {
            reason: 'unavailable',
            tool: doc.name,
            server: doc.server,
          },
        ),
        'input requests are not available',
      );
    }
    let items;
    try {
      items = inputs.classify(
        req,
        doc,
        { [pushedKey(question)]: { method: question.method, params: question.params } },
        ctx.formsByRuntime,
      );
    } catch (err) {
      return refuse(err, 'the connector cannot show this question');
    }
    try {
      await inputs.stop(req, doc, items, {
        argsHash: argumentsHash(req.arguments),
        round: ctx.round,
        approved: ctx.approved,
        era: 'legacy',
        ...(this.deps.instance !== undefined ? { holder: this.deps.instance } : {}),
      });
    } catch (err) {
      const id =
        err instanceof WireError && err.code === ErrorCodes.inputRequired ? err.details.inputRequestId : undefined;
      if (typeof id !== 'string') return refuse(err, 'the question could not be recorded');
      legacyAsks.park(id, { result: pending, channel, question });
      onParked();
      throw err;
    }
    return refuse(new WireError(ErrorCodes.internal, 'internal error'), 'internal error');
  }

  /** The re-sent legacy call: the held server request gets the answer, and the call goes on (or asks again). */
  private async resumeParked(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    resumption: Resumption,
    ctx: { formsByRuntime: boolean; approved: boolean },
    started: number,
    span: Span,
  ): Promise<ProxyResult> {
    const parked = this.deps.legacyAsks?.take(req.inputRequestId ?? '');
    if (parked === undefined) {
      throw new WireError(
        ErrorCodes.inputRefused,
        `${doc.name}: the call that asked is no longer held (its server gave up, it timed out, or it ran on another proxy instance); call the tool afresh`,
        {
          reason: 'lost',
          tool: doc.name,
          server: doc.server,
          inputRequestId: req.inputRequestId,
        },
      );
    }
    span.setAttribute('mcp.server', doc.server);
    if (parked.question.method === 'elicitation/create')
      span.addEvent('legacy elicitation answered: the server call goes on');
    const { question } = parked;
    const answer = resumption.inputResponses[pushedKey(question)];
    if (question.method === 'sampling/createMessage') {
      span.addEvent('legacy sampling answered by the runtime: the server call goes on');
      question.answer(answer as CreateMessageResult);
    } else question.answer((answer ?? { action: 'cancel' }) as ElicitResult);
    const result = await this.untilQuestion(
      req,
      doc,
      parked.result,
      parked.channel,
      { ...ctx, round: resumption.round + 1 },
      () => {},
    );
    return this.finish(doc, req, result, started);
  }
}

/** The request key a pushed legacy question is recorded under (one question per round). */
function pushedKey(question: PushedQuestion): string {
  return question.method === 'sampling/createMessage' ? 'sampling' : 'elicitation';
}
