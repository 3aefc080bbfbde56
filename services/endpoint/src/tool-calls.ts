import { randomUUID } from 'node:crypto';
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Counter,
  type Histogram,
  type Tracer,
} from '@opentelemetry/api';
import { clientTraceOrigin } from '@mcpx/telemetry';
import {
  ErrorCodes,
  INPUT_REQUEST_ID_RE,
  WireError,
  toWireError,
  type CallLog,
  type CallProgress,
  type InputRequestItem,
  type LogLevel,
} from '@mcpx/contracts';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS } from '@mcpx/shared-state';
import type { ProxyClient } from '@mcpx/proxy-client';
import {
  inputRequired,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { foreignState, isInputState, stateRefusal } from './input-states.js';
import type { EndpointTasks } from './endpoint-tasks.js';
import type { TaskEra } from './task-wire.js';
import { META_APPROVAL_ID, META_INPUT_REQUEST_ID, callToolResult, errorResult } from './call-result.js';
import type { AgentToolSet, ToolSets } from './tool-sets.js';
import { APPROVAL_INPUT_KEY, UserApprovals, type ApprovalQuestion } from './user-approvals.js';
import { wireInputRequest } from './task-wire.js';

/** The proxy's own call timeout; a client's request may ask for less in `_meta`, never more. */
const CALL_TIMEOUT_MS = 120_000;

/** One `tools/call` as either serving path (the SDK's handler, the lean path) hands it over. */
export interface ToolCallInput {
  grant: TokenGrant;
  name: string;
  arguments: Record<string, unknown>;
  /** The request's `_meta` (the connector's keys, the trace context). */
  meta: Record<string, unknown> | undefined;
  /** Trace headers of the HTTP request (used when `_meta` has none). */
  headers?: { traceparent?: string | null; tracestate?: string | null };
  /** A 2026-07-28 retry's `requestState` and `inputResponses`. */
  requestState?: unknown;
  inputResponses?: Record<string, unknown>;
  /**
   * What the client can answer itself, as it declared: forms (elicitation), URL questions (URL
   * elicitation: the console link of an owner's decision) and sampling.
   */
  caps: { elicitation?: boolean; elicitationUrl?: boolean; sampling?: boolean; roots?: boolean };
  /** The JSON-RPC request id (a 2025 client's cancel names it). */
  requestId: string | number;
  signal: AbortSignal;
  /** Which path serves it (a span attribute): the SDK's handler, or the lean path beside it. */
  path: 'sdk' | 'lean';
  /** The agent's tool set as the serving path just read it (the call is judged on the same set, without reading it again). */
  toolSet?: AgentToolSet;
  /**
   * Sends the client a `notifications/progress` for its own `progressToken` (set when the request's
   * `_meta` carried one): the server's progress, relayed by the proxy (docs/endpoint.md#progress).
   */
  progress?: (progress: CallProgress) => void;
  /**
   * The server's log messages at `logLevel` and above, each sent to the client as
   * `notifications/message` by `log` (docs/endpoint.md#logging). Both or neither.
   */
  logLevel?: LogLevel;
  log?: (log: CallLog) => void;
  /** The client asked for a task, in this dialect: a task tool's call answers at once with the created task (docs/endpoint.md#tasks). */
  task?: TaskEra;
}

/** The client's `_meta.progressToken` (a string or an integer, as MCP says), or undefined. */
export function progressTokenOf(meta: Record<string, unknown> | undefined): string | number | undefined {
  const token = meta?.progressToken;
  if (typeof token === 'string' && token.length <= 256) return token;
  return typeof token === 'number' && Number.isSafeInteger(token) ? token : undefined;
}

/**
 * Whether a client's declared `elicitation` capability covers forms: `{form: …}`, or `{}` (the
 * 2025 form, which meant forms). One that declares only `url` cannot be asked a form.
 */
export function declaresForms(elicitation: unknown): boolean {
  if (elicitation === null || typeof elicitation !== 'object' || Array.isArray(elicitation)) return false;
  return Object.keys(elicitation).length === 0 || 'form' in elicitation;
}

/** Whether a client's declared `elicitation` capability covers URL questions (`{url: …}`). */
export function declaresUrl(elicitation: unknown): boolean {
  return elicitation !== null && typeof elicitation === 'object' && !Array.isArray(elicitation) && 'url' in elicitation;
}

/** Thrown for a tool the agent does not have: the MCP answer (InvalidParams), before the proxy is asked. */
export function unknownTool(name: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 128)}`);
}

export interface ToolCallsDeps {
  toolSets: ToolSets;
  proxy: ProxyClient;
  tracer: Tracer;
  approvals: UserApprovals;
  requests: Counter;
  duration: Histogram;
  onError: (err: Error) => void;
  /** Calls that became tasks (absent: a task's handle is answered as the proxy words it). */
  tasks?: EndpointTasks;
}

/**
 * The proxy's `input_required` (every question addressed to the runtime, i.e. this client) as this
 * endpoint's own `input_required`: the same questions by key, and the input request id as the
 * `requestState` (the server's own state stays sealed in the proxy).
 */
/** MCP 2026-07-28's MissingRequiredClientCapability. */
const MISSING_CAPABILITY = -32021;

/** Whether a request's `_meta` is the 2026-07-28 envelope (a 2025 request carries no protocol version there). */
function isModern(meta: unknown): boolean {
  return (
    meta !== null &&
    typeof meta === 'object' &&
    typeof (meta as Record<string, unknown>)['io.modelcontextprotocol/protocolVersion'] === 'string'
  );
}

export function passOnInputRequired(err: WireError): InputRequiredResult | undefined {
  const id = err.details.inputRequestId;
  const items = err.details.requests;
  if (typeof id !== 'string' || !Array.isArray(items) || items.length === 0) return undefined;
  const inputRequests: Record<string, { method: string; params: Record<string, unknown> }> = {};
  for (const q of items as InputRequestItem[]) {
    const wire = wireInputRequest(q);
    if (wire === undefined) return undefined;
    inputRequests[q.key] = wire;
  }
  return inputRequired({
    inputRequests: inputRequests as Parameters<typeof inputRequired>[0]['inputRequests'],
    requestState: id,
  });
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

  constructor(private readonly deps: ToolCallsDeps) {}

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
  async call(input: ToolCallInput): Promise<CallToolResult | InputRequiredResult> {
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
    try {
      return await context.with(trace.setSpan(parent, span), () => this.run(input, span, outcome));
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.setAttribute('mcpx.outcome', outcome.value);
      span.end();
      this.deps.requests.add(1, { method: 'tools/call', outcome: outcome.value });
      this.deps.duration.record(performance.now() - started, { outcome: outcome.value });
    }
  }

  /** The question of an approval the call waits for, when this client can answer one (see {@link ToolCalls.run}). */
  private async approvalQuestion(
    input: ToolCallInput,
    approvalId: string,
  ): Promise<{ kind: 'form' | 'url'; question: ApprovalQuestion } | undefined> {
    const { grant, name } = input;
    const asked = (
      kind: 'form' | 'url',
      q: Promise<ApprovalQuestion | undefined>,
    ): Promise<{ kind: 'form' | 'url'; question: ApprovalQuestion } | undefined> =>
      q.then(
        (question) => (question === undefined ? undefined : { kind, question }),
        (e: unknown) => {
          this.deps.onError(e as Error);
          return undefined;
        },
      );
    if (input.caps.elicitation === true && grant.userMayApprove) {
      const form = await asked('form', this.deps.approvals.ask(grant, name, input.arguments, approvalId));
      if (form !== undefined) return form;
    }
    if (input.caps.elicitationUrl === true)
      return asked('url', this.deps.approvals.askUrl(grant, name, input.arguments, approvalId));
    return undefined;
  }

  /** An approval's refusal with the console link where the owner decides it (`details.decideAt`), when one is set. */
  private withLink(wire: WireError): WireError {
    const id = wire.details.approvalId;
    if (wire.code !== ErrorCodes.approvalRequired || typeof id !== 'string') return wire;
    const link = this.deps.approvals.link(id);
    return link === undefined ? wire : new WireError(wire.code, wire.message, { ...wire.details, decideAt: link });
  }

  private async run(
    input: ToolCallInput,
    span: ReturnType<Tracer['startSpan']>,
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
    const refused = (wire: WireError): CallToolResult => {
      outcome.value = wire.code;
      span.setAttribute('mcpx.error.code', wire.code);
      return errorResult(this.withLink(wire));
    };
    let approvalId: string | undefined;
    const metaApproval = meta?.[META_APPROVAL_ID];
    if (typeof metaApproval === 'string' && metaApproval !== '' && metaApproval.length <= 128)
      approvalId = metaApproval;
    // The answer of this client's user to an approval question this endpoint asked.
    if (UserApprovals.isState(input.requestState)) {
      let verdict;
      try {
        verdict = await this.deps.approvals.answer(
          grant,
          name,
          input.arguments,
          input.requestState,
          input.inputResponses?.[APPROVAL_INPUT_KEY],
        );
      } catch (err) {
        if (err instanceof WireError) return refused(err);
        // Nothing was decided and nothing ran: an outage is said as one, any other fault is ours.
        if (isRedisUnavailable(err))
          return refused(
            new WireError(ErrorCodes.unavailable, 'approvals cannot be decided right now; answer again shortly', {
              dependency: 'redis',
              retryAfterMs: REDIS_RETRY_AFTER_MS,
            }),
          );
        this.deps.onError(err as Error);
        return refused(toWireError(err));
      }
      span.setAttribute('mcpx.approval.answer', verdict.answer);
      if (verdict.answer === 'decline') {
        return refused(
          new WireError(
            ErrorCodes.approvalRefused,
            `${name}: the client's user declined the approval; the call did not run`,
            {
              approvalId: verdict.approvalId,
              reason: 'denied',
              decidedBy: 'client_user',
              tool: name,
            },
          ),
        );
      }
      if (verdict.answer === 'cancel') {
        return refused(
          new WireError(
            ErrorCodes.approvalRequired,
            `${name} needs a human's approval before it runs; the client's user did not answer, so the account owner decides`,
            {
              approvalId: verdict.approvalId,
              tool: name,
            },
          ),
        );
      }
      // Approved now (or decided before by the owner: the proxy's use of the approval says which).
      // A URL question's answer decides nothing: the call is re-sent as it is, and the proxy finds
      // its approval by the call's digest.
      if (verdict.answer !== 'resend') approvalId = verdict.approvalId;
    }
    // A server's question passed on to this client comes back with the answers and the id as its requestState (bound by
    // the proxy to this run, tool and arguments, used once); one the owner answered is re-sent with the id in _meta.
    const echoed = input.requestState;
    // A state this endpoint never gives is refused before anything is asked (input-states.ts).
    if (echoed !== undefined && !UserApprovals.isState(echoed) && !isInputState(echoed)) {
      outcome.value = ErrorCodes.invalidInput;
      throw foreignState();
    }
    const metaInput = meta?.[META_INPUT_REQUEST_ID];
    const inputRequestId =
      typeof echoed === 'string' && INPUT_REQUEST_ID_RE.test(echoed)
        ? echoed
        : typeof metaInput === 'string' && INPUT_REQUEST_ID_RE.test(metaInput)
          ? metaInput
          : undefined;
    const inputResponses = input.inputResponses;
    const answers = {
      ...(input.caps.elicitation === true ? { forms: true } : {}),
      ...(input.caps.sampling === true ? { sampling: true } : {}),
      ...(input.caps.roots === true ? { roots: true } : {}),
      ...(input.task === 'modern' ? { tasks: true } : {}), // its task's questions, on tasks/get (docs/tasks.md#questions)
    };
    // A call re-sent to wait for the task an earlier one left running (a client without tasks).
    const resumedTask = this.deps.tasks?.resumed(meta);
    if (resumedTask !== undefined) return await this.deps.tasks!.resume(grant, name, resumedTask, input.signal);
    const callId = randomUUID();
    const run = `ep-${grant.id}`;
    let cancelled = false;
    const onAbort = (): void => {
      if (cancelled) return;
      cancelled = true;
      void this.deps.proxy.cancel(grant.account, run, callId).catch(() => undefined);
    };
    input.signal.addEventListener('abort', onAbort, { once: true });
    const inflightKey = `${grant.id}\u0000${String(input.requestId)}`;
    const calls = this.inflight.get(inflightKey);
    if (calls === undefined) this.inflight.set(inflightKey, [onAbort]);
    else calls.push(onAbort);
    let relayed = 0;
    const progress = input.progress;
    const onProgress =
      progress === undefined
        ? undefined
        : (p: CallProgress): void => {
            relayed++;
            progress(p);
          };
    let logged = 0;
    const log = input.log;
    const onLog =
      log === undefined || input.logLevel === undefined
        ? undefined
        : (l: CallLog): void => {
            logged++;
            log(l);
          };
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
      });
      if (result.task !== undefined && this.deps.tasks !== undefined) {
        outcome.value = 'task';
        return await this.deps.tasks.answer(grant, name, result.task, input.task);
      }
      if (result.isError === true) outcome.value = ErrorCodes.serverError;
      return callToolResult(result);
    } catch (err) {
      const wire = err instanceof WireError ? err : toWireError(err);
      // An echoed input request id the proxy will not take: refused as a state, not as a tool result.
      const badState = isInputState(echoed) ? stateRefusal(wire) : undefined;
      if (badState !== undefined) {
        outcome.value = wire.code;
        throw badState;
      }
      // Questions the client may answer itself go on to it as input_required (the SDK pushes
      // them as elicitation/create to a 2025 client); the owner's stay a tool result naming them.
      const passed =
        wire.code === ErrorCodes.inputRequired && wire.details.forPerson === false
          ? passOnInputRequired(wire)
          : undefined;
      if (passed !== undefined) {
        outcome.value = 'input_required';
        return passed;
      }
      // An approval the call waits for: asked of the client's user as a form when the token's
      // user may give it and the client answers forms; else, to a client that opens URL questions,
      // the console link where the owner decides it; else a refusal naming both.
      const waiting =
        wire.code === ErrorCodes.approvalRequired &&
        approvalId === undefined &&
        typeof wire.details.approvalId === 'string'
          ? wire.details.approvalId
          : undefined;
      if (waiting !== undefined) {
        const question = await this.approvalQuestion(input, waiting);
        if (question !== undefined) {
          outcome.value = 'approval_asked';
          span.setAttribute('mcpx.approval.asked', question.kind);
          return inputRequired(question.question as Parameters<typeof inputRequired>[0]);
        }
      }
      // A 2026-07-28 client that declared no sampling, of a server that asks its model: the
      // revision's MissingRequiredClientCapability (-32021, HTTP 400), as the server says it directly.
      if (
        wire.code === ErrorCodes.inputRefused &&
        wire.details.reason === 'sampling_unsupported' &&
        isModern(input.meta)
      ) {
        outcome.value = 'missing_capability';
        throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
      }
      // The server's own -32021 (told what this client declared, it asked for what the client lacks): an error, as directly.
      if (wire.code === ErrorCodes.serverError && wire.details.mcpCode === MISSING_CAPABILITY && isModern(input.meta)) {
        outcome.value = 'missing_capability';
        throw new ProtocolError(MISSING_CAPABILITY, wire.message);
      }
      if (wire.code === ErrorCodes.internal) this.deps.onError(err as Error);
      return refused(wire);
    } finally {
      if (progress !== undefined) span.setAttribute('mcpx.progress.relayed', relayed);
      if (onLog !== undefined) span.setAttributes({ 'mcpx.log.level': input.logLevel!, 'mcpx.log.relayed': logged });
      input.signal.removeEventListener('abort', onAbort);
      const left = this.inflight.get(inflightKey)?.filter((f) => f !== onAbort);
      if (left === undefined || left.length === 0) this.inflight.delete(inflightKey);
      else this.inflight.set(inflightKey, left);
    }
  }
}
