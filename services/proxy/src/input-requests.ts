import type { Counter, Meter } from '@opentelemetry/api';
import {
  ErrorCodes,
  INPUT_LIMITS,
  WireError,
  type ElicitAnswer,
  type InputRequestItem,
  type InputRequestedEvent,
} from '@mcpx/contracts';
import {
  PendingInputsFullError,
  newInputRequestId,
  type InputConsumeReason,
  type InputRecord,
  type InputStore,
  type PendingCaps,
} from '@mcpx/shared-state';
import type { SecretBox } from '@mcpx/secrets';
import { checkRuntimeAnswer, runtimeResponses, storedForRuntime } from './input-answers.js';
import {
  classifyQuestions,
  inputRequiredError,
  refused,
  type InputAsker,
  type InputTarget,
} from './input-questions.js';
import { pendingCaps, pendingFullError, pendingStoreDown, type PendingCapsDeps } from './pending-refusals.js';

// The call path and the relays read a round through the gate's module, as before the questions had their own.
export { inputRequiredError, inputRoundOf, type InputAsker, type InputTarget } from './input-questions.js';

/** What a re-sent call carries to the server: the answers by key, and the server's own state, unsealed. */
export interface Resumption {
  inputResponses: Record<string, unknown>;
  requestState?: string;
  /** The round just answered (the next `input_required` is one more). */
  round: number;
  /** The call had passed the approval gate: its later rounds need no new approval. */
  approved: boolean;
  record: InputRecord;
}

/** Its caps (`PendingCapsDeps`) default to the pending-approvals cap per agent and `config.quotas.pendingInputs*`. */
export interface InputGateDeps extends PendingCapsDeps {
  store: InputStore;
  /** Seals the server's `requestState` (AES-256-GCM, the deployment's key ring). */
  box: SecretBox;
  /** Publishes the input-requested event (a core-NATS notification, `Bus.notify`). */
  notify: (subject: string, event: InputRequestedEvent) => void;
  subject: (account: string) => string;
  meter?: Meter;
}

const REFUSALS: Record<InputConsumeReason, string> = {
  unknown: 'there is no such input request',
  expired: 'the input request expired',
  used: 'the input request was already used: each answer goes with one call',
  pending: 'the input request has not been answered yet',
  mismatch: 'the input request was asked for another agent, run, tool or arguments',
};

/** The additional data that binds a sealed `requestState` to its account and input request. */
function stateAad(account: string, id: string): string {
  return `input-state\u0000${account}\u0000${id}`;
}

/**
 * The people-and-runtime side of a server's questions (2026-07-28 `input_required`). A call whose
 * server answers `input_required` is recorded as an input request (its `requestState` sealed, never
 * shown) and stops with `input_required`, carrying the request id, the questions and who answers
 * each: form elicitations a person (or the runtime, when the agent's definition lets it and the
 * runtime says it can), URL elicitations always a person, sampling the runtime when it samples
 * (else the call fails, saying so). Roots are refused. Re-sent with `inputRequestId`, the call is
 * retried with the answers and the unsealed state, once, and only for the agent, run, tool and
 * arguments the question was asked for.
 */
export class InputGate {
  private readonly caps: Required<PendingCaps>;
  private readonly rounds: Counter | undefined;
  private readonly rejections: Counter | undefined;

  constructor(private readonly deps: InputGateDeps) {
    this.caps = pendingCaps(deps, 'input');
    this.rounds = deps.meter?.createCounter('mcpx_proxy_input_requests_total', {
      description: 'Input requests of tool calls, by outcome (asked, resumed, refused) and era',
    });
    this.rejections = deps.meter?.createCounter('mcpx_quota_rejections_total', {
      description: 'Requests refused by a quota or rate limit, by kind',
    });
  }

  /**
   * The questions of an `input_required` result as they are shown, with who answers each. Throws
   * the typed error of a question this connector does not answer (roots; sampling for a runtime
   * that does not sample) or cannot show (a schema outside the restricted one).
   */
  classify(
    req: InputAsker,
    doc: InputTarget,
    inputRequests: Record<string, { method: string; params?: unknown }>,
    formsByRuntime: boolean,
  ): InputRequestItem[] {
    return classifyQuestions(req, doc, inputRequests, formsByRuntime, (reason) =>
      this.rounds?.add(1, { outcome: 'refused', reason }),
    );
  }

  /**
   * Records an input request unless the agent, or its account across all its agents, has its
   * quota waiting for a person: then the call fails with `quota_exceeded` and nothing is recorded.
   * The store counts both and records in one step, so racing calls never pass a cap.
   */
  private async createWithin(input: Parameters<InputStore['create']>[0], doc: InputTarget): Promise<InputRecord> {
    let full: PendingInputsFullError;
    try {
      return await this.deps.store.create(input, this.caps);
    } catch (err) {
      if (!(err instanceof PendingInputsFullError)) throw pendingStoreDown(err, 'input');
      full = err;
    }
    const error = pendingFullError('input', full, doc.name);
    this.rejections?.add(1, { kind: String(error.details.limit) });
    throw error;
  }

  /**
   * Records the round's questions and stops the call: throws `input_required` with the request
   * id, the questions and who answers them (never the server's `requestState`).
   */
  async stop(
    req: InputAsker,
    doc: InputTarget,
    items: InputRequestItem[],
    ctx: {
      argsHash: string;
      round: number;
      approved: boolean;
      era: 'modern' | 'legacy';
      requestState?: string;
      holder?: string;
      /** Every answer is kept with the request, the runtime's too (a task's round: no call is re-sent to carry them). */
      storeAll?: boolean;
    },
  ): Promise<never> {
    if (ctx.round > INPUT_LIMITS.rounds) {
      this.rounds?.add(1, { outcome: 'refused', reason: 'too_many_rounds' });
      throw refused(
        doc,
        'too_many_rounds',
        `the server asked again after ${INPUT_LIMITS.rounds} rounds of questions; the call stops here`,
      );
    }
    if (
      ctx.requestState !== undefined &&
      Buffer.byteLength(ctx.requestState, 'utf8') > INPUT_LIMITS.requestStateBytes
    ) {
      this.rounds?.add(1, { outcome: 'refused', reason: 'state_too_large' });
      throw refused(
        doc,
        'state_too_large',
        `the server's requestState is over ${INPUT_LIMITS.requestStateBytes} bytes; the connector keeps no more for a round, and the call stops here`,
      );
    }
    const personKeys = items.filter((i) => ctx.storeAll === true || i.answerBy === 'person').map((i) => i.key);
    const id = newInputRequestId();
    let sealedState: string | undefined;
    if (ctx.requestState !== undefined) {
      const sealed = this.deps.box.seal(ctx.requestState, stateAad(req.account, id));
      sealedState = `${sealed.keyId}.${sealed.ciphertext.toString('base64')}`;
    }
    const record = await this.createWithin(
      {
        id,
        account: req.account,
        agent: req.agent,
        run: req.run,
        tool: req.tool,
        argsHash: ctx.argsHash,
        server: doc.server,
        remoteName: doc.remoteName,
        round: ctx.round,
        era: ctx.era,
        approved: ctx.approved,
        requestsJson: JSON.stringify(items),
        personKeys,
        ...(sealedState !== undefined ? { sealedState } : {}),
        ...(ctx.holder !== undefined ? { holder: ctx.holder } : {}),
      },
      doc,
    );
    const expiresAt = new Date(record.expiresAt).toISOString();
    const event: InputRequestedEvent = {
      account: req.account,
      inputRequestId: id,
      agent: req.agent,
      run: req.run,
      tool: req.tool,
      server: doc.server,
      forPerson: items.some((i) => i.answerBy === 'person'),
      expiresAt,
    };
    this.deps.notify(this.deps.subject(req.account), event);
    this.rounds?.add(1, { outcome: 'asked', era: ctx.era });
    throw inputRequiredError(doc, record, items);
  }

  /**
   * The answers of a re-sent call's input request: the runtime's own (checked against the
   * questions it may answer) and a person's (checked when given), and the server's state,
   * unsealed. Then the request is used, once. Throws `input_required` while a person has not
   * answered, `input_refused` for anything that cannot be used, `invalid_input` for a runtime
   * answer that does not fit.
   */
  async resume(req: InputAsker, doc: InputTarget, argsHash: string): Promise<Resumption> {
    const id = req.inputRequestId!;
    const binding = { agent: req.agent, run: req.run, tool: req.tool, argsHash };
    const found = await this.deps.store.get(req.account, id);
    if (found === null) throw this.refusal(doc, id, 'unknown');
    // Refusals first (the store's consume decides again, atomically): a replay says so before anything is checked.
    if (found.status === 'used') throw this.refusal(doc, id, 'used');
    if (
      found.agent !== binding.agent ||
      found.run !== binding.run ||
      found.tool !== binding.tool ||
      found.argsHash !== binding.argsHash
    )
      throw this.refusal(doc, id, 'mismatch');
    if (Date.now() >= found.expiresAt) throw this.refusal(doc, id, 'expired');
    const items = JSON.parse(found.requestsJson) as InputRequestItem[];
    const responses = runtimeResponses(found, items, req.inputResponses ?? {}, doc.name);
    const requestState = this.openState(found, req.account, doc);
    const out = await this.deps.store.consume(req.account, id, binding);
    if (!out.ok) {
      if (out.reason === 'pending') {
        throw new WireError(
          ErrorCodes.inputRequired,
          `${doc.name} is still waiting for a person to answer its question`,
          { ...inputRequiredError(doc, found, items).details, waiting: true },
        );
      }
      throw this.refusal(doc, id, out.reason);
    }
    this.storedAnswers(out.record, items, responses, doc);
    this.rounds?.add(1, { outcome: 'resumed', era: out.record.era });
    return {
      inputResponses: responses,
      ...(requestState !== undefined ? { requestState } : {}),
      round: out.record.round,
      approved: out.record.approved,
      record: out.record,
    };
  }

  /** A recorded round as its caller reads it: the questions, the keys answered so far, until when. Null: gone. */
  async round(
    account: string,
    id: string,
  ): Promise<{ requests: InputRequestItem[]; answered: string[]; expiresAt: string } | null> {
    const found = await this.deps.store.get(account, id);
    if (found === null || found.status === 'used' || Date.now() >= found.expiresAt) return null;
    const requests = JSON.parse(found.requestsJson) as InputRequestItem[];
    return { requests, answered: Object.keys(found.answers ?? {}), expiresAt: new Date(found.expiresAt).toISOString() };
  }

  /**
   * The caller's answers to a task's round (docs/tasks.md#questions): each key must be a question
   * the round gave the caller, its answer fits the question, and it is kept sealed with the request
   * until the instance polling the task sends it on. Partial answers are kept until all are in.
   * `invalid_input` naming the key for an answer that does not fit or a question not the caller's;
   * `input_refused` for a request that is gone or already answered. Whether the round is complete.
   */
  async answerStored(
    account: string,
    doc: InputTarget,
    id: string,
    given: Record<string, unknown>,
  ): Promise<{ complete: boolean }> {
    const found = await this.deps.store.get(account, id);
    if (found === null) throw this.refusal(doc, id, 'unknown');
    if (found.status !== 'pending') throw this.refusal(doc, id, 'used');
    if (Date.now() >= found.expiresAt) throw this.refusal(doc, id, 'expired');
    const items = JSON.parse(found.requestsJson) as InputRequestItem[];
    const checked: Array<[string, unknown]> = [];
    for (const [key, v] of Object.entries(given)) {
      const field = `inputResponses.${key.slice(0, 64)}`;
      const item = items.find((i) => i.key === key);
      if (item === undefined || !storedForRuntime(found, item))
        throw new WireError(ErrorCodes.invalidInput, `${field}: not a question this task asked its caller`, { field });
      checked.push([key, checkRuntimeAnswer(item, v, field)]);
    }
    let complete = false;
    for (const [key, answer] of checked) {
      const out = await this.deps.store.answer(account, id, key, JSON.stringify(answer), 'runtime');
      // An answer given before (a re-sent update) stands: the first one counts.
      if (!out.ok && out.reason !== 'answered_already')
        throw this.refusal(doc, id, out.reason === 'expired' ? 'expired' : 'used');
      if (out.ok) complete = out.complete;
    }
    return { complete };
  }

  /** The server's `requestState` of a round, unsealed (bound to its account and input request); `input_refused` when altered. */
  private openState(found: InputRecord, account: string, doc: InputTarget): string | undefined {
    if (found.sealedState === undefined) return undefined;
    const dot = found.sealedState.indexOf('.');
    try {
      return this.deps.box.open(
        {
          keyId: found.sealedState.slice(0, dot),
          ciphertext: Buffer.from(found.sealedState.slice(dot + 1), 'base64'),
        },
        stateAad(account, found.id),
      );
    } catch {
      this.rounds?.add(1, { outcome: 'refused', reason: 'tampered' });
      throw refused(
        doc,
        'tampered',
        'the stored state of the input request does not open (it was altered); ask again by calling the tool afresh',
        { inputRequestId: found.id },
      );
    }
  }

  /**
   * The answers kept with a used round, into `responses`: a person's (a cancel when none was
   * given) and a task's runtime answers, which are checked again; `input_refused` when one was
   * altered.
   */
  private storedAnswers(
    record: InputRecord,
    items: InputRequestItem[],
    responses: Record<string, unknown>,
    doc: InputTarget,
  ): void {
    for (const item of items) {
      const stored = storedForRuntime(record, item);
      if (item.answerBy !== 'person' && !stored) continue;
      let raw: string | undefined;
      try {
        raw = this.deps.store.openAnswer(record, item.key);
      } catch {
        this.rounds?.add(1, { outcome: 'refused', reason: 'tampered' });
        throw refused(
          doc,
          'tampered',
          "a person's stored answer does not open (it was altered); ask again by calling the tool afresh",
          { inputRequestId: record.id },
        );
      }
      if (raw === undefined) responses[item.key] = { action: 'cancel' };
      else
        responses[item.key] = stored
          ? checkRuntimeAnswer(item, JSON.parse(raw), item.key)
          : (JSON.parse(raw) as ElicitAnswer);
    }
  }

  private refusal(doc: InputTarget, id: string, reason: InputConsumeReason): WireError {
    this.rounds?.add(1, { outcome: 'refused', reason });
    return refused(doc, reason, REFUSALS[reason], { inputRequestId: id });
  }
}
