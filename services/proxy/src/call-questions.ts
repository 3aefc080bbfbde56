import type { Span } from '@opentelemetry/api';
import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import { isInputRequired, type CreateMessageResult, type ElicitResult, type McpCallResult } from '@mcpx/mcp-client';
import { argumentsHash } from './approval-gate.js';
import { inputRoundOf, type InputGate, type Resumption } from './input-requests.js';
import { raceQuestion, type CallChannel, type LegacyAsks, type PushedQuestion } from './legacy-inputs.js';

export interface CallQuestionsDeps {
  /** Servers' questions (`input_required`) to a person or the runtime; absent, such a call fails with a typed error. */
  inputs?: InputGate;
  /** Legacy servers' pushed `elicitation/create`, held while a person answers (absent: such a question is refused). */
  legacyAsks?: LegacyAsks;
  /** Names this instance as the holder of a parked legacy call. */
  instance?: string;
}

/** Where the call stands when its server asks: its round, whether it was approved, who may answer forms. */
export interface QuestionContext {
  formsByRuntime: boolean;
  approved: boolean;
  round: number;
}

/** Sends the call again with the server's `requestState` (a round with no question). */
export type Resend = (requestState: unknown) => Promise<McpCallResult>;

const unavailable = (doc: McpToolDocument): WireError =>
  new WireError(
    ErrorCodes.inputRefused,
    `${doc.name} asks for input before it can finish, and input requests are not available here`,
    { reason: 'unavailable', tool: doc.name, server: doc.server },
  );

/**
 * A server's questions during a call, in both eras: a modern `input_required` result is recorded
 * and the call stops with `input_required`; a legacy server's pushed question is recorded and its
 * request held (parked) until the call is re-sent with the answer.
 */
export class CallQuestions {
  constructor(private readonly deps: CallQuestionsDeps) {}

  /**
   * A modern result, unless it is an input request (2026-07-28 `input_required`): then the
   * questions are recorded and the call stops with `input_required` (a round with only a
   * `requestState` and no question is sent straight back, a bounded number of times).
   */
  async answered(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    first: McpCallResult,
    ctx: QuestionContext,
    span: Span,
    resend: Resend,
  ): Promise<McpCallResult> {
    let result = first;
    for (let hops = 0; isInputRequired(result); hops++) {
      const round = inputRoundOf(result);
      const { inputs } = this.deps;
      if (inputs === undefined) throw unavailable(doc);
      const asked = Object.keys(round.inputRequests).length;
      if (asked === 0 && round.requestState !== undefined && hops < 8) {
        span.addEvent('input_required with state only: sent straight back');
        result = await resend(round.requestState);
        continue;
      }
      if (asked === 0)
        throw new WireError(
          ErrorCodes.serverError,
          `the ${doc.server} MCP server answered input_required with no question`,
          { server: doc.server, tool: doc.name },
        );
      const items = inputs.classify(req, doc, round.inputRequests, ctx.formsByRuntime);
      span.addEvent('input requested', { 'mcpx.input_questions': items.length });
      await inputs.stop(req, doc, items, {
        argsHash: argumentsHash(req.arguments),
        round: ctx.round,
        approved: ctx.approved,
        era: 'modern',
        ...(round.requestState !== undefined ? { requestState: round.requestState } : {}),
      });
    }
    return result;
  }

  /**
   * A legacy call's result, unless its server pushes a question first: then the question is recorded
   * as an input request, the server's request is held (`onParked`) and the call stops with
   * `input_required`. A question that cannot be shown or recorded is refused to the server (a
   * sampling request when the runtime does not sample: the caller gets `input_refused`
   * `sampling_unsupported`, as from a modern server).
   */
  async untilQuestion(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    pending: Promise<McpCallResult>,
    channel: CallChannel,
    ctx: QuestionContext,
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
    if (inputs === undefined || legacyAsks === undefined)
      return refuse(unavailable(doc), 'input requests are not available');
    let items;
    try {
      const asked = { [pushedKey(question)]: { method: question.method, params: question.params } };
      items = inputs.classify(req, doc, asked, ctx.formsByRuntime);
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
  async resumeParked(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    resumption: Resumption,
    ctx: Omit<QuestionContext, 'round'>,
    span: Span,
  ): Promise<McpCallResult> {
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
    const round = resumption.round + 1;
    return await this.untilQuestion(req, doc, parked.result, parked.channel, { ...ctx, round }, () => {});
  }
}

/** The request key a pushed legacy question is recorded under (one question per round). */
function pushedKey(question: PushedQuestion): string {
  return question.method === 'sampling/createMessage' ? 'sampling' : 'elicitation';
}
