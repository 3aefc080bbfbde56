import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Meter,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { ErrorCodes, MAX_CALL_TIMEOUT_MS, type ProxyCallRequest, type WireError } from '@mcpx/contracts';
import type { McpToolDocument, ProxyResult } from '@mcpx/domain';
import type { CallLimiter, CallLimits } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import type { ServerCredentials } from '@mcpx/stored';
import type { McpCallResult } from '@mcpx/mcp-client';
import { McpAttributes, spanIds } from '@mcpx/telemetry';
import type { ApprovalGate } from './approval-gate.js';
import { limitRefusal, limitRefusalKind } from './call-decisions.js';
import type { Catalog } from './catalog.js';
import type { ConnectionPool } from './connection-pool.js';
import type { InputGate, Resumption } from './input-requests.js';
import { CallChannel, type LegacyAsks } from './legacy-inputs.js';
import { CallMetrics, type CallTarget } from './call-metrics.js';
import { CallChecks } from './call-checks.js';
import { CallQuestions, type QuestionContext } from './call-questions.js';
import type { ProgressRelay } from './progress-relay.js';
import type { LogRelay } from './log-relay.js';
import type { ActivityRecorder } from './activity-recorder.js';
import type { OAuthTokens } from './oauth-tokens.js';
import { finishedCall, type ReplyLimits } from './reply-limits.js';
import { StrictPins } from './strict-pins.js';
import { UpstreamSend, type UpstreamDeps } from './upstream-send.js';
import { toWire } from './wire-errors.js';
import { authContextOf } from './era-verdicts.js';
import { newTaskId, taskRun, type TaskCalls } from './tasks/task-calls.js';

export { toWire } from './wire-errors.js';

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
  private readonly checks: CallChecks;
  private readonly questions: CallQuestions;
  private readonly upstream: UpstreamDeps;

  constructor(private readonly deps: CallHandlerDeps) {
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
    this.checks = new CallChecks({ ...deps, metrics: this.metrics });
    this.questions = new CallQuestions(deps);
    this.upstream = {
      tracer: deps.tracer,
      pool: deps.pool,
      pins: deps.pins ?? new StrictPins(deps.meter),
      ...(deps.oauth !== undefined ? { oauth: deps.oauth } : {}),
      ...(deps.legacyAsks !== undefined ? { legacyAsks: deps.legacyAsks } : {}),
      resumed: (span, server, outcome) => this.resumedStream(span, server, outcome),
    };
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

  /**
   * Runs one call in the trace context `parent` (from the request's headers). `answer`, when
   * given, is told the outcome as soon as it is known, before the call's span is ended and its
   * metrics and call-log row are written: the caller's reply does not wait for the bookkeeping.
   */
  async handle(req: ProxyCallRequest, parent: Context, answer?: CallAnswer): Promise<ProxyResult> {
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
    let result: ProxyResult;
    try {
      result = await this.execute(req, key, started, span, target, ctx);
    } catch (err) {
      const wire = toWire(err);
      code = wire.code;
      this.held.delete(key);
      try {
        answer?.(undefined, wire);
      } catch {
        // The caller's answer failed (its reply is its own concern): the call is still accounted for below.
      }
      // A fault of ours: the caller sees only `internal`; the operator sees what it was.
      const fields = { tool: req.tool, err: err as Error, ...spanIds(span) };
      if (wire.code === ErrorCodes.internal) this.deps.log?.error('a call failed with an unexpected error', fields);
      span.setStatus({ code: SpanStatusCode.ERROR, message: wire.message });
      span.setAttributes({ 'mcpx.error_code': wire.code, [McpAttributes.errorCode]: wire.code });
      this.done(req, span, code, started, target);
      throw wire;
    }
    // A server's error passed on whole (`content`) is counted as the server_error it is for the runtime.
    if (result.isError === true) code = ErrorCodes.serverError;
    this.held.delete(key);
    try {
      answer?.(result, undefined);
    } finally {
      this.done(req, span, code, started, target);
    }
    return result;
  }

  /** A call's bookkeeping once it is answered: its span ended, its metrics and its call-log row. */
  private done(req: ProxyCallRequest, span: Span, code: string, started: number, target: CallTarget): void {
    span.setAttribute(McpAttributes.outcome, code);
    span.end();
    const ms = performance.now() - started;
    this.count(code, ms, target);
    this.deps.activity?.record(req, target, code, ms);
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
    const { agent, entry } = await this.checks.lookUp(req);
    const { doc } = entry;
    // The metrics' labels: names from the registry's document, never from the request.
    target.server = doc.server;
    target.tool = doc.remoteName;
    req = this.checks.validated(req, entry, target, ctx);
    this.checks.granted(agent, doc, ctx);
    const resumption = await this.checks.resumption(req, doc, span);
    const approved = await this.checks.approved(req, doc, resumption, span, ctx);
    const forms = { formsByRuntime: agent.formsByRuntime === true, approved };
    // A legacy server that pushed its question is still holding its request: the answer goes to it.
    if (resumption?.record.era === 'legacy') {
      target.era = 'legacy';
      const result = await this.questions.resumeParked(req, doc, resumption, forms, span);
      return finishedCall(doc, req, result, started, this.deps.replyLimits);
    }
    const server = await this.checks.serverFor(req, doc, ctx);
    span.setAttribute('mcp.server', doc.server);
    const timeoutMs = Math.min(req.timeoutMs ?? MAX_CALL_TIMEOUT_MS, MAX_CALL_TIMEOUT_MS);
    const release = await this.admitted(req, doc, key, timeoutMs);
    const call: Admitted = { req, doc, server, key, started, span, target, ctx, timeoutMs, release, ...forms };
    return await this.run(call, { ...forms, round: (resumption?.round ?? 0) + 1 }, resumption);
  }

  /** The call admitted under its server's shared limits; what frees its concurrency slot (none without limits). */
  private async admitted(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    key: string,
    timeoutMs: number,
  ): Promise<(() => void) | undefined> {
    const { limiter, limits } = this.deps;
    if (limiter === undefined || limits === undefined) return undefined;
    const lease = `${this.deps.instance ?? 'proxy'}:${key}`;
    const admitted = limiter.admit(`${req.account}:${doc.server}`, limits, lease, timeoutMs + 30_000);
    // Usually answered from what this instance holds, without a round trip (or an await).
    const admission = admitted instanceof Promise ? await admitted : admitted;
    if (!admission.ok) {
      this.rejections.add(1, { kind: limitRefusalKind(admission) });
      throw limitRefusal(doc.server, limits, admission);
    }
    return admission.release;
  }

  /** Sends the admitted call upstream and waits for its result, its server's questions, or its task. */
  private async run(call: Admitted, asked: QuestionContext, resumption: Resumption | undefined): Promise<ProxyResult> {
    const { req, doc, key, span, release } = call;
    // A task-augmented call (docs/tasks.md): refused past the account's running-tasks cap before
    // it is sent, and sent on a pool run of its own (a legacy task lives in its session).
    const tasks = this.deps.tasks;
    const taskId = tasks !== undefined && tasks.wanted(doc, req) ? newTaskId() : undefined;
    if (taskId !== undefined) {
      try {
        await tasks!.admit(req.account);
      } catch (err) {
        release?.();
        throw err;
      }
      span.setAttribute('mcpx.task', taskId);
    }
    const ctl = new AbortController();
    this.inflight.set(key, ctl);
    const progress = req.progress === true ? this.deps.progress?.open(req, span) : undefined;
    const logs = req.logLevel !== undefined ? this.deps.logs?.open(req, req.logLevel, span) : undefined;
    // Set once a legacy call is held for a person: its lease and its place in flight end with the server's call.
    let parkedOut = false;
    const done = (): void => {
      this.inflight.delete(key);
      release?.();
      // A task-augmented call's own pool run ends with the call, failed or not (a recorded task's was let go already).
      if (taskId !== undefined) void this.deps.pool.endRun(req.account, taskRun(taskId));
    };
    // A legacy server may push a question during the call: it is routed to this call's channel.
    const channel = this.deps.legacyAsks !== undefined ? new CallChannel() : undefined;
    try {
      const sender = new UpstreamSend(this.upstream, {
        ...call,
        controller: ctl,
        ...(resumption !== undefined ? { resumption } : {}),
        ...(taskId !== undefined ? { task: { id: taskId, ttlMs: tasks!.maxTtlMs } } : {}),
        ...(progress !== undefined ? { progress } : {}),
        ...(logs !== undefined ? { logs } : {}),
        ...(channel !== undefined ? { channel } : {}),
      });
      const pending = sender.send();
      // A modern server asks with input_required in its result, never mid-call: no question to race.
      const first =
        channel === undefined || sender.era === 'modern'
          ? await pending
          : await this.questions.untilQuestion(req, doc, pending, channel, asked, () => {
              parkedOut = true;
              pending.then(done, done);
            });
      const task = taskId !== undefined ? await this.brokered(call, sender, taskId, first) : undefined;
      if (task !== undefined) return task;
      const result = await this.questions.answered(req, doc, first, asked, span, (state) => sender.again(state));
      // A task made only once a requestState-only round was sent back is brokered alike, never answered as a tool result.
      const later =
        taskId !== undefined && result !== first ? await this.brokered(call, sender, taskId, result) : undefined;
      return later ?? finishedCall(doc, req, result, call.started, this.deps.replyLimits);
    } finally {
      progress?.close();
      logs?.close();
      if (!parkedOut) done();
    }
  }

  /** A task-augmented call's result as its broker hands it on; undefined when the server answered the call itself. */
  private async brokered(
    call: Admitted,
    sender: UpstreamSend,
    taskId: string,
    result: McpCallResult,
  ): Promise<ProxyResult | undefined> {
    const { req, doc, started, timeoutMs } = call;
    const brokered = await this.deps.tasks!.brokered({
      req,
      doc,
      taskId,
      result,
      era: sender.era ?? 'legacy',
      target: sender.taskTarget,
      authContext: authContextOf(sender.server.url, sender.server.headers),
      formsByRuntime: call.formsByRuntime,
      started,
      remainingMs: Math.min(timeoutMs - (performance.now() - started), req.taskWaitMs ?? MAX_CALL_TIMEOUT_MS),
    });
    // The server answered the call itself: the task's pool run ends with the call (see `done`).
    return brokered;
  }
}

/** Told a call's outcome once it is known (a result, or the typed error the caller is answered with). */
export type CallAnswer = (result: ProxyResult | undefined, error: WireError | undefined) => void;

/** A call past its admission: what its upstream request and its reply need. */
interface Admitted {
  req: ProxyCallRequest;
  doc: McpToolDocument;
  server: ServerCredentials;
  key: string;
  started: number;
  span: Span;
  target: CallTarget;
  ctx: Context;
  timeoutMs: number;
  release: (() => void) | undefined;
  /** Whether the agent's runtime answers form questions (a task's questions go to it then). */
  formsByRuntime: boolean;
}
