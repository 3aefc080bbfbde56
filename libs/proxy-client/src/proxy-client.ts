import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  ENDPOINT_RUN_PREFIX,
  ErrorCodes,
  INPUT_LIMITS,
  NatsFailures,
  WireError,
  decodeCallLog,
  decodeCallProgress,
  MAX_RELAY_TIMEOUT_MS,
  decodeRelayReply,
  encodeCallRequest,
  encodePayload,
  encodeRelayRequest,
  natsFailure,
  type ProxyCallReply,
  type ProxyCallRequest,
  type ProxyCancel,
  type RelayRequest,
  type RunEnded,
  type Subjects,
} from '@mcpx/contracts';
import { traceHeaders, type Context, type Counter, type Meter } from '@mcpx/telemetry';
import { watchDecisions, watchInputAnswers } from './decisions.js';
import { publishNotification } from './notifications.js';
import { decodeCallReply, listenCall } from './call-reply.js';
import { StickyRuns } from './sticky-runs.js';
import { RequestMux, type MuxRequestOptions } from './request-mux.js';
import {
  DEFAULT_LIVENESS,
  inputRequiredOf,
  type ApprovalWait,
  type CallInput,
  type CallOutcome,
  type InputRequired,
  type InputWait,
  type LivenessOptions,
} from './call-types.js';

/** The proxy's own call timeout (120 s, docs/limits.md#the-call); the request waits a little longer. */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const REPLY_MARGIN_MS = 5_000;

/** Nobody listens on the subject (told by nats.js' class, `./nats-failures.ts` of the contracts). */
function isNoResponders(err: unknown): boolean {
  return natsFailure(err) === NatsFailures.noResponders;
}

/**
 * The agent runtime's side of the proxy: the first call of a run goes to the queue group, the
 * reply names the instance, and the run's later calls go to `mcp.proxy.<instance>.call` so that
 * they reuse that instance's pool. When the instance is gone, the call falls back to the group.
 */
export class ProxyClient {
  private readonly sticky = new StickyRuns();

  private readonly liveness: LivenessOptions;
  private readonly checks: Counter | undefined;
  private readonly endpointRuns: boolean;
  private readonly mux: RequestMux;

  /**
   * `endpointRuns`: this client is the agent endpoint's, and may call in its runs
   * (`ep-<token id>`); any other client refuses them (`invalid_input` naming `run`).
   */
  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    opts: { liveness?: LivenessOptions; meter?: Meter; endpointRuns?: boolean } = {},
  ) {
    this.endpointRuns = opts.endpointRuns === true;
    this.mux = new RequestMux(nc);
    this.liveness = opts.liveness ?? DEFAULT_LIVENESS;
    this.checks = opts.meter?.createCounter('mcpx_proxy_client_held_checks_total', {
      description: 'Checks that a long call is still held by a proxy instance, by answer (here, silent, lost)',
    });
  }

  /** The instance a run is stuck to, if any (e.g. to persist it between CLI invocations). */
  instanceOf(run: string): string | undefined {
    return this.sticky.get(run);
  }

  stick(run: string, instance: string): void {
    this.sticky.set(run, instance);
  }

  /**
   * Relays one request of a granted server's resources, prompts or completions through the proxy
   * (`mcp.proxy.relay`): the server's result, bounded. Params that the proxy would refuse are
   * refused here (`invalid_input` naming the field), nothing sent; a failure is a WireError with
   * the proxy's typed code (a server's own JSON-RPC error keeps its `mcpCode` in the details).
   */
  async relay(req: RelayRequest, opts: { trace?: Context } = {}): Promise<Record<string, unknown>> {
    const payload = encodeRelayRequest(req);
    const headers = traceHeaders(opts.trace);
    const timeout = Math.min(req.timeoutMs ?? MAX_RELAY_TIMEOUT_MS, MAX_RELAY_TIMEOUT_MS) + REPLY_MARGIN_MS;
    let data: Uint8Array;
    try {
      data = (await this.mux.request(this.subjects.proxyRelay, payload, { timeout, headers })).data;
    } catch (err) {
      if (isNoResponders(err))
        throw new WireError(ErrorCodes.transportError, 'no proxy instance is running to take the request');
      if (natsFailure(err) === NatsFailures.timeout)
        throw new WireError(ErrorCodes.timeout, 'the proxy did not answer in time');
      throw err;
    }
    const reply = decodeRelayReply(data);
    if (!reply.ok) throw WireError.from(reply.error);
    return reply.result;
  }

  /** Runs one call; throws a WireError with the proxy's typed code when it fails. */
  async call(input: CallInput): Promise<CallOutcome> {
    if (!this.endpointRuns && input.run.startsWith(ENDPOINT_RUN_PREFIX)) {
      throw new WireError(
        ErrorCodes.invalidInput,
        `run: must not start with ${ENDPOINT_RUN_PREFIX}: those runs are the agent endpoint's`,
        { field: 'run' },
      );
    }
    const callId = input.callId ?? randomUUID();
    const req: ProxyCallRequest = {
      account: input.account,
      agent: input.agent,
      run: input.run,
      tool: input.tool,
      arguments: input.arguments ?? {},
      callId,
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
      ...(input.approvalId !== undefined ? { approvalId: input.approvalId } : {}),
      ...(input.inputRequestId !== undefined ? { inputRequestId: input.inputRequestId } : {}),
      ...(input.inputResponses !== undefined ? { inputResponses: input.inputResponses } : {}),
      ...(input.answers !== undefined ? { answers: input.answers } : {}),
      ...(input.content === true ? { content: true } : {}),
      ...(input.onProgress !== undefined ? { progress: true } : {}),
      ...(input.logLevel !== undefined && input.onLog !== undefined ? { logLevel: input.logLevel } : {}),
      ...(input.task === true ? { task: true } : {}),
      ...(input.taskWaitMs !== undefined ? { taskWaitMs: input.taskWaitMs } : {}),
    };
    const timeout = (input.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS) + REPLY_MARGIN_MS;
    // Refused here, typed and naming the bound, rather than failing in the encoder or at NATS.
    const payload = encodeCallRequest(req, this.nc.info?.max_payload);
    const held: ProxyCancel = { account: input.account, run: input.run, callId };
    // Subscribed before the request goes out on the same connection, so the server knows the
    // subscription before the proxy can publish on it.
    const heard =
      input.onProgress !== undefined
        ? listenCall(
            this.nc,
            this.subjects.callProgress(input.account, input.run, callId),
            decodeCallProgress,
            input.onProgress,
          )
        : undefined;
    const logs =
      req.logLevel !== undefined
        ? listenCall(this.nc, this.subjects.callLog(input.account, input.run, callId), decodeCallLog, input.onLog!)
        : undefined;
    let reply: ProxyCallReply;
    try {
      reply = await this.watch(
        this.exchange(input.run, payload, { timeout, headers: traceHeaders(input.trace) }),
        held,
      );
    } finally {
      heard?.unsubscribe();
      logs?.unsubscribe();
    }
    this.sticky.set(input.run, reply.instance);
    if (!reply.ok) throw WireError.from(reply.error);
    return { result: reply.result, instance: reply.instance, callId };
  }

  /**
   * A call that may stop for a human: on `approval_required` it waits, up to `waitMs`, for the
   * owner's decision (the approval-decided event, and a re-send every `pollMs` since the event may
   * be lost; a re-send of an undecided approval runs nothing), and re-sends the call with the
   * approval once it is given. A denial or an expiry is `approval_refused`; no decision in time is
   * the original `approval_required` (its approval can still be decided and used).
   */
  async callAwaitingApproval(input: CallInput, opts: ApprovalWait): Promise<CallOutcome> {
    const callId = input.callId ?? randomUUID();
    try {
      return await this.call({ ...input, callId });
    } catch (err) {
      const approvalId =
        err instanceof WireError && err.code === ErrorCodes.approvalRequired ? err.details.approvalId : undefined;
      if (typeof approvalId !== 'string' || input.approvalId !== undefined) throw err;
      const watch = watchDecisions(this.nc, this.subjects.approvalDecided(input.account), approvalId);
      await this.nc.flush();
      opts.onApprovalRequired?.(approvalId);
      try {
        const deadline = Date.now() + opts.waitMs;
        for (;;) {
          const left = deadline - Date.now();
          if (left <= 0) throw err;
          await watch.next(Math.min(opts.pollMs ?? 5_000, left));
          try {
            return await this.call({ ...input, approvalId });
          } catch (again) {
            if (!(again instanceof WireError && again.code === ErrorCodes.approvalRequired)) throw again;
          }
        }
      } finally {
        watch.close();
      }
    }
  }

  /**
   * A call whose server may ask questions mid-call (`input_required`): each round's questions
   * addressed to the runtime are answered with `opts.answer`; for those addressed to a person it
   * waits, up to `waitMs` over all rounds, for the answers (the input-answered event, and a re-send
   * every `pollMs` since the event may be lost; a re-send of an unanswered request runs nothing),
   * then re-sends the call with the input request, and so on for every round the server asks
   * (bounded). No answer in time is the round's `input_required` (the request can still be answered
   * and used); anything refused is the proxy's typed error.
   */
  async callAwaitingInput(input: CallInput, opts: InputWait): Promise<CallOutcome> {
    const callId = input.callId ?? randomUUID();
    const deadline = Date.now() + opts.waitMs;
    let asked: InputRequired | undefined;
    let last: unknown;
    try {
      return await this.call({ ...input, callId });
    } catch (err) {
      asked = inputRequiredOf(err);
      if (asked === undefined || input.inputRequestId !== undefined) throw err;
      last = err;
    }
    for (let rounds = 0; rounds <= INPUT_LIMITS.rounds; rounds++) {
      const mine = asked.requests.filter((q) => q.answerBy === 'runtime');
      let responses: Record<string, unknown> | undefined;
      if (mine.length > 0) {
        if (opts.answer === undefined) throw last;
        responses = await opts.answer(mine, asked);
      }
      const current: CallInput = {
        ...input,
        callId,
        run: asked.run ?? input.run,
        inputRequestId: asked.inputRequestId,
        ...(responses !== undefined ? { inputResponses: responses } : {}),
      };
      // The next round's question, or the call's outcome.
      const resend = async (): Promise<{ outcome?: CallOutcome; next?: InputRequired }> => {
        try {
          return { outcome: await this.call(current) };
        } catch (again) {
          const next = inputRequiredOf(again);
          if (next === undefined) throw again;
          last = again;
          return { next };
        }
      };
      let got: { outcome?: CallOutcome; next?: InputRequired };
      if (!asked.forPerson) {
        got = await resend();
      } else {
        opts.onInputRequired?.(asked);
        const watch = watchInputAnswers(this.nc, this.subjects.inputAnswered(input.account), asked.inputRequestId);
        await this.nc.flush();
        try {
          for (;;) {
            const left = deadline - Date.now();
            if (left <= 0) throw last;
            await watch.next(Math.min(opts.pollMs ?? 5_000, left));
            got = await resend();
            // Still waiting for this round's answers: keep waiting.
            if (got.next?.inputRequestId !== asked.inputRequestId) break;
          }
        } finally {
          watch.close();
        }
      }
      if (got.outcome !== undefined) return got.outcome;
      if (got.next === undefined || got.next.inputRequestId === asked.inputRequestId) throw last;
      asked = got.next;
    }
    throw last;
  }

  async cancel(account: string, run: string, callId: string): Promise<void> {
    const msg: ProxyCancel = { account, run, callId };
    // A call still waiting for the end of its turn goes first: the proxy hears it before its cancel.
    this.mux.flushQueued();
    publishNotification(this.nc, this.subjects.proxyCancel, msg);
    await this.nc.flush();
  }

  /** Ends a run: every proxy instance closes the run's pool. */
  async endRun(account: string, run: string): Promise<void> {
    const msg: RunEnded = { account, run };
    publishNotification(this.nc, this.subjects.runEnded(account, run), msg);
    this.sticky.delete(run);
    await this.nc.flush();
  }

  /** The request, on the run's instance when it has one, else (or when that one is gone) the queue group. */
  private async exchange(run: string, payload: Uint8Array, opts: MuxRequestOptions): Promise<ProxyCallReply> {
    const instance = this.sticky.get(run);
    try {
      if (instance === undefined) return await this.send(this.subjects.proxyCall, payload, opts);
      try {
        return await this.send(this.subjects.proxyInstanceCall(instance), payload, opts);
      } catch (err) {
        if (!isNoResponders(err)) throw err;
        this.sticky.delete(run);
        return await this.send(this.subjects.proxyCall, payload, opts);
      }
    } catch (err) {
      // Nothing ran: no instance received the call. Retryable once a proxy is up.
      if (isNoResponders(err))
        throw new WireError(ErrorCodes.transportError, 'no proxy instance is running to take the call');
      throw err;
    }
  }

  /** Waits for `pending`, unless no proxy instance holds the call any more ({@link LivenessOptions}). */
  private async watch(pending: Promise<ProxyCallReply>, held: ProxyCancel): Promise<ProxyCallReply> {
    const { afterMs, everyMs, answerMs, misses } = this.liveness;
    if (afterMs <= 0) return pending;
    // One promise and one timer per call, settled by whichever comes first (no Promise.race:
    // every call pays for this, and nearly every call ends long before the first check).
    return new Promise<ProxyCallReply>((resolve, reject) => {
      let settled = false;
      let missed = 0;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        return true;
      };
      const check = async (): Promise<void> => {
        const here = await this.mux
          .request(this.subjects.proxyCallHeld, encodePayload(held), { timeout: answerMs })
          .then(
            () => true,
            () => false,
          );
        if (settled) return;
        missed = here ? 0 : missed + 1;
        this.checks?.add(1, { answer: here ? 'here' : missed < misses ? 'silent' : 'lost' });
        if (missed < misses) {
          timer = setTimeout(() => void check(), everyMs);
          return;
        }
        this.sticky.delete(held.run);
        // The abandoned request still ends (its own timeout): its outcome is nobody's now.
        if (settle())
          reject(
            new WireError(
              ErrorCodes.callLost,
              'the proxy instance running the call went away before answering; the call may or may not have reached the server',
              { callId: held.callId },
            ),
          );
      };
      let timer: NodeJS.Timeout = setTimeout(() => void check(), afterMs);
      pending.then(
        (reply) => {
          if (settle()) resolve(reply);
        },
        (err: Error) => {
          if (settle()) reject(err);
        },
      );
    });
  }

  private async send(subject: string, payload: Uint8Array, opts: MuxRequestOptions): Promise<ProxyCallReply> {
    let data: Uint8Array;
    try {
      data = (await this.mux.request(subject, payload, opts)).data;
    } catch (err) {
      // No responders goes up as it is (the caller tries the queue group, or says transport_error).
      switch (natsFailure(err)) {
        case NatsFailures.timeout:
          throw new WireError(ErrorCodes.timeout, 'the proxy did not answer in time');
        case NatsFailures.closed:
          throw new WireError(ErrorCodes.transportError, 'the connection to NATS is closed: the call was not sent');
        case NatsFailures.lost:
          throw new WireError(
            ErrorCodes.maybeExecuted,
            'the connection to NATS dropped while the call was out: it may have run; it was not retried',
          );
        case NatsFailures.noResponders:
        case NatsFailures.unreachable:
        case NatsFailures.refused:
        case undefined:
          throw err;
      }
    }
    return decodeCallReply(data);
  }
}
