import { randomUUID } from 'node:crypto';
import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Counter,
  type Histogram,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { clientTraceOrigin } from '@mcpx/telemetry';
import { ErrorCodes, WireError, toWireError, type CallLog, type CallProgress } from '@mcpx/contracts';
import type { ProxyClient } from '@mcpx/proxy-client';
import {
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { foreignState, isInputState } from './input-states.js';
import type { EndpointTasks } from './endpoint-tasks.js';
import { callToolResult, errorResult } from './call-result.js';
import type { ToolSets } from './tool-sets.js';
import { UserApprovals } from './user-approvals.js';
import { answersOf, inputRequestIdOf, metaApprovalId, unknownTool, type ToolCallInput } from './call-input.js';
import { CallApprovals } from './call-approvals.js';
import { failureAnswer } from './call-failures.js';

// What the serving paths (agent-server.ts, lean-calls.ts, relayed.ts) take from here, as before the split.
export { declaresForms, declaresUrl, progressTokenOf, unknownTool, type ToolCallInput } from './call-input.js';
export { passOnInputRequired } from './call-failures.js';

/** The proxy's own call timeout; a client's request may ask for less in `_meta`, never more. */
const CALL_TIMEOUT_MS = 120_000;

export interface ToolCallsDeps {
  toolSets: ToolSets;
  proxy: ProxyClient;
  tracer: Tracer;
  approvals: UserApprovals;
  requests: Counter;
  duration: Histogram;
  onError: (err: Error, span?: Span) => void;
  /** Calls that became tasks (absent: a task's handle is answered as the proxy words it). */
  tasks?: EndpointTasks;
}

/**
 * Told a call's outcome as soon as it is known, before its span ends and its metrics are counted
 * (the serving path writes its answer here): the result, or what was thrown.
 */
export type CallAnswer = (result: CallToolResult | InputRequiredResult | undefined, error: unknown) => void;

/** One call on its way: its span, its outcome for the metrics, and its refusal as a tool result. */
interface CallState {
  span: Span;
  /** The call's trace context (its span's), passed by hand: this process's context does not follow awaits. */
  ctx: Context;
  outcome: { value: string };
  refused: (wire: WireError) => CallToolResult;
}

/**
 * `tools/call` of an agent's endpoint, whichever path serves it: the tool set checked, the call
 * sent through the proxy as the token's run (`ep-<token id>`), so every rule of the gateway
 * applies, and the outcome shaped as MCP (a result, a refusal as an `isError` result, or an
 * `input_required` for questions the client may answer: the server's own, and approvals when the
 * token's user may give them). A span and the endpoint's call metrics per call.
 */
export class ToolCalls {
  /**
   * Calls in flight by token and JSON-RPC request id: a 2025 client's `notifications/cancelled`
   * arrives as a POST of its own (stateless serving: another server instance), so it finds the
   * call here. Two calls of one token under one id (two clients sharing a token) are ambiguous:
   * such a cancel is ignored, as MCP allows, rather than stopping the wrong one.
   */
  private readonly inflight = new Map<string, Array<() => void>>();
  private readonly approvals: CallApprovals;

  constructor(private readonly deps: ToolCallsDeps) {
    this.approvals = new CallApprovals(deps.approvals, deps.onError);
  }

  /** The endpoint's tasks, when calls may become tasks (a 2025 `tasks/result` on the lean path is served by them). */
  get tasks(): EndpointTasks | undefined {
    return this.deps.tasks;
  }

  /** A 2025 client's `notifications/cancelled` of its request `id`. */
  cancelled(grant: TokenGrant, id: unknown): void {
    if (typeof id !== 'string' && typeof id !== 'number') return;
    const calls = this.inflight.get(`${grant.id}\u0000${String(id)}`);
    if (calls?.length === 1) calls[0]?.();
  }

  /**
   * Runs the call; throws (a ProtocolError) only for a tool the agent does not have, a capability
   * a 2026-07-28 client did not declare, and a `requestState` it will not take (input-states.ts).
   */
  async call(input: ToolCallInput, answer?: CallAnswer): Promise<CallToolResult | InputRequiredResult> {
    const { grant, name } = input;
    // A new trace linked to the client's (`_meta.traceparent` of 2026-07-28, else the HTTP headers), never its child.
    const { parent, links } = clientTraceOrigin(input.meta, input.headers);
    const span = this.deps.tracer.startSpan(
      'endpoint.tools/call',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'mcpx.account': grant.account,
          'mcpx.agent': grant.agent,
          'mcpx.tool': name,
          'mcpx.endpoint.path': input.path,
        },
        links,
      },
      parent,
    );
    const started = performance.now();
    const outcome = { value: 'ok' };
    let result: CallToolResult | InputRequiredResult;
    try {
      result = await this.run(input, span, trace.setSpan(parent, span), outcome);
    } catch (err) {
      try {
        answer?.(undefined, err);
      } finally {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        this.done(span, outcome.value, started);
      }
      throw err;
    }
    // The answer is written before the span ends and the metrics are counted: it does not wait for them.
    try {
      answer?.(result, undefined);
    } finally {
      this.done(span, outcome.value, started);
    }
    return result;
  }

  /** A call's span ended and its metrics counted, once it is answered. */
  private done(span: Span, outcome: string, started: number): void {
    span.setAttribute('mcpx.outcome', outcome);
    span.end();
    this.deps.requests.add(1, { method: 'tools/call', outcome });
    this.deps.duration.record(performance.now() - started, { outcome });
  }

  /** The tool set checked, an approval answer taken, the requestState checked; then the call sent. */
  private async run(
    input: ToolCallInput,
    span: Span,
    ctx: Context,
    outcome: { value: string },
  ): Promise<CallToolResult | InputRequiredResult> {
    const { grant, name, meta } = input;
    const set = input.toolSet ?? (await this.deps.toolSets.get(grant.account, grant.agent));
    // The token's agent was deleted since the token was read.
    if (set === null) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'the agent no longer exists');
    if (!set.byName.has(name)) {
      outcome.value = 'unknown_tool';
      throw unknownTool(name);
    }
    const state: CallState = {
      span,
      ctx,
      outcome,
      refused: (wire) => {
        outcome.value = wire.code;
        span.setAttribute('mcpx.error.code', wire.code);
        return errorResult(this.approvals.withLink(wire));
      },
    };
    let approvalId = metaApprovalId(meta);
    // The answer of this client's user to an approval question this endpoint asked.
    if (UserApprovals.isState(input.requestState)) {
      const answered = await this.approvals.answer(input, input.requestState, approvalId);
      if (answered.answer !== undefined) span.setAttribute('mcpx.approval.answer', answered.answer);
      if (answered.refusal !== undefined) return state.refused(answered.refusal);
      approvalId = answered.approvalId;
    }
    const echoed = input.requestState;
    // A state this endpoint never gives is refused before anything is asked (input-states.ts).
    if (echoed !== undefined && !UserApprovals.isState(echoed) && !isInputState(echoed)) {
      outcome.value = ErrorCodes.invalidInput;
      throw foreignState();
    }
    // A call re-sent to wait for the task an earlier one left running (a client without tasks).
    const resumedTask = this.deps.tasks?.resumed(meta);
    if (resumedTask !== undefined) return await this.deps.tasks!.resume(grant, name, resumedTask, input.gone.signal);
    return await this.send(input, state, approvalId);
  }

  /** The call through the proxy as the token's run, cancellable by the client, its progress and log relayed. */
  private async send(
    input: ToolCallInput,
    state: CallState,
    approvalId: string | undefined,
  ): Promise<CallToolResult | InputRequiredResult> {
    const { grant, name } = input;
    const { span, outcome } = state;
    const callId = randomUUID();
    const run = `ep-${grant.id}`;
    const release = this.track(
      input,
      () => void this.deps.proxy.cancel(grant.account, run, callId).catch(() => undefined),
    );
    const relayed = { progress: 0, logs: 0 };
    const progress = input.progress;
    const onProgress =
      progress === undefined
        ? undefined
        : (p: CallProgress): void => {
            relayed.progress++;
            progress(p);
          };
    const log = input.log;
    const onLog =
      log === undefined || input.logLevel === undefined
        ? undefined
        : (l: CallLog): void => {
            relayed.logs++;
            log(l);
          };
    const inputRequestId = inputRequestIdOf(input.requestState, input.meta);
    const inputResponses = input.inputResponses;
    const answers = answersOf(input);
    try {
      const { result } = await this.deps.proxy.call({
        account: grant.account,
        agent: grant.agent,
        run,
        tool: name,
        arguments: input.arguments,
        callId,
        timeoutMs: CALL_TIMEOUT_MS,
        ...(approvalId !== undefined ? { approvalId } : {}),
        ...(inputRequestId !== undefined ? { inputRequestId } : {}),
        ...(inputRequestId !== undefined && inputResponses !== undefined && Object.keys(inputResponses).length > 0
          ? { inputResponses }
          : {}),
        ...(Object.keys(answers).length > 0 ? { answers } : {}),
        content: true,
        ...(onProgress !== undefined ? { onProgress } : {}),
        ...(onLog !== undefined ? { logLevel: input.logLevel, onLog } : {}),
        // A client that asked for a task polls it itself: the handle at once.
        ...(input.task !== undefined ? { task: true, taskWaitMs: 0 } : {}),
        trace: state.ctx,
      });
      if (result.task !== undefined && this.deps.tasks !== undefined) {
        outcome.value = 'task';
        return await this.deps.tasks.answer(grant, name, result.task, input.task);
      }
      if (result.isError === true) outcome.value = ErrorCodes.serverError;
      return callToolResult(result);
    } catch (err) {
      const wire = err instanceof WireError ? err : toWireError(err);
      const answer = await failureAnswer(wire, {
        input,
        approvalId,
        ask: (id) => this.approvals.question(input, id),
        outcome,
        mark: (key, value) => span.setAttribute(key, value),
      });
      if (answer !== undefined) return answer;
      if (wire.code === ErrorCodes.internal) this.deps.onError(err as Error, span);
      return state.refused(wire);
    } finally {
      if (progress !== undefined) span.setAttribute('mcpx.progress.relayed', relayed.progress);
      if (onLog !== undefined)
        span.setAttributes({ 'mcpx.log.level': input.logLevel!, 'mcpx.log.relayed': relayed.logs });
      release();
    }
  }

  /**
   * Makes the call cancellable by the client's signal and by a 2025 client's
   * `notifications/cancelled` (see {@link ToolCalls.cancelled}), once; the returned function
   * forgets it.
   */
  private track(input: ToolCallInput, cancel: () => void): () => void {
    let cancelled = false;
    const onAbort = (): void => {
      if (cancelled) return;
      cancelled = true;
      cancel();
    };
    const unlisten = input.gone.onAbort(onAbort);
    const key = `${input.grant.id}\u0000${String(input.requestId)}`;
    const calls = this.inflight.get(key);
    if (calls === undefined) this.inflight.set(key, [onAbort]);
    else calls.push(onAbort);
    return () => {
      unlisten();
      const now = this.inflight.get(key);
      // The common case, one call under its id: forgotten without a copy.
      if (now === undefined || (now.length === 1 && now[0] === onAbort)) this.inflight.delete(key);
      else
        this.inflight.set(
          key,
          now.filter((f) => f !== onAbort),
        );
    };
  }
}
