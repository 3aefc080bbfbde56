import type { Counter, Meter } from '@opentelemetry/api';
import {
  ENDPOINT_RUN_PREFIX,
  ErrorCodes,
  INPUT_LIMITS,
  WireError,
  checkRequestedSchema,
  type ElicitAnswer,
  type InputRequestItem,
  type InputRequestedEvent,
  type ProxyCallRequest,
  type RestrictedSchema,
} from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import {
  PendingInputsFullError,
  newInputRequestId,
  type InputConsumeReason,
  type InputRecord,
  type InputStore,
  type PendingCaps,
} from '@mcpx/shared-state';
import type { SecretBox } from '@mcpx/secrets';
import { checkRuntimeAnswer, jsonBytes } from './input-answers.js';
import { pendingCaps, pendingFullError, pendingStoreDown, type PendingCapsDeps } from './pending-refusals.js';

/** Who asks, and for what: a call's request, or a relayed request's (`prompts/get`, `resources/read`). */
export type InputAsker = Pick<
  ProxyCallRequest,
  'account' | 'agent' | 'run' | 'tool' | 'answers' | 'inputRequestId' | 'inputResponses'
>;
/** Whose question it is: a tool's document, or the prompt or resource of a relayed request. */
export type InputTarget = Pick<McpToolDocument, 'name' | 'server' | 'remoteName'>;

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

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/** A runtime's question whose answer is kept with the input request (a task's: no call is re-sent to carry it). */
function storedForRuntime(record: InputRecord, item: InputRequestItem): boolean {
  return item.answerBy === 'runtime' && record.personKeys.includes(`,${item.key},`);
}

function serverFault(doc: InputTarget, why: string, extra: Record<string, unknown> = {}): WireError {
  return new WireError(
    ErrorCodes.serverError,
    `the ${doc.server} MCP server asked for input that cannot be shown (${why})`,
    {
      server: doc.server,
      tool: doc.name,
      reason: 'invalid_input_request',
      ...extra,
    },
  );
}

function refused(doc: InputTarget, reason: string, message: string, extra: Record<string, unknown> = {}): WireError {
  return new WireError(ErrorCodes.inputRefused, `${doc.name}: ${message}`, {
    reason,
    tool: doc.name,
    server: doc.server,
    ...extra,
  });
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
    const keys = Object.keys(inputRequests);
    if (keys.length > INPUT_LIMITS.requestsPerRound)
      throw serverFault(doc, `${keys.length} questions at once; at most ${INPUT_LIMITS.requestsPerRound}`);
    const items: InputRequestItem[] = [];
    // A form goes to the caller when it declares it answers forms and either the agent's definition
    // lets its runtime answer them (`inputs.forms: "runtime"`, a setting about an unattended NATS
    // runtime), or the caller is the agent endpoint's MCP client (its `ep-` run, which no runtime
    // may use): a client that declared form elicitation shows the form to its own user.
    const endpointClient = req.run.startsWith(ENDPOINT_RUN_PREFIX);
    for (const key of keys) {
      if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(key))
        throw serverFault(doc, 'a request key that is not 1-64 letters, digits or _ . : -');
      const { method, params } = inputRequests[key]!;
      const p = isMap(params) ? params : {};
      if (method === 'roots/list') {
        // Only a runtime that shares its own roots answers (the endpoint's client that declared
        // `roots`); the connector has none of its own to give.
        if (req.answers?.roots !== true) {
          this.rounds?.add(1, { outcome: 'refused', reason: 'roots_unsupported' });
          throw refused(
            doc,
            'roots_unsupported',
            'the server asks for roots, which the calling runtime does not declare it shares (answers.roots), and this connector has none of its own (roots are deprecated in 2026-07-28)',
            { key },
          );
        }
        items.push({ key, kind: 'roots', answerBy: 'runtime' });
        continue;
      }
      if (method === 'sampling/createMessage') {
        if (req.answers?.sampling !== true) {
          this.rounds?.add(1, { outcome: 'refused', reason: 'sampling_unsupported' });
          throw refused(
            doc,
            'sampling_unsupported',
            "the server asks the client's model to sample a message, and the calling runtime does not declare that it samples (answers.sampling)",
            { key },
          );
        }
        if (jsonBytes(p) > INPUT_LIMITS.samplingParamsBytes)
          throw serverFault(doc, `a sampling request over ${INPUT_LIMITS.samplingParamsBytes / 1024} KiB`, { key });
        items.push({ key, kind: 'sampling', answerBy: 'runtime', params: p });
        continue;
      }
      if (method !== 'elicitation/create')
        throw serverFault(doc, `an unknown kind of request (${method.slice(0, 64)})`, { key });
      const message = typeof p.message === 'string' ? p.message.slice(0, INPUT_LIMITS.messageChars) : '';
      if (p.mode === 'url' || (p.mode === undefined && typeof p.url === 'string')) {
        const url = typeof p.url === 'string' ? p.url : '';
        let parsed: URL | undefined;
        try {
          parsed = url.length <= INPUT_LIMITS.urlChars ? new URL(url) : undefined;
        } catch {
          parsed = undefined;
        }
        if (parsed === undefined || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
          throw serverFault(doc, 'a URL elicitation without an http(s) URL', { key });
        const item: InputRequestItem = { key, kind: 'url', answerBy: 'person', message, url: parsed.href };
        if (typeof p.elicitationId === 'string' && p.elicitationId.length <= 200) item.elicitationId = p.elicitationId;
        items.push(item);
        continue;
      }
      let schema: RestrictedSchema;
      try {
        schema = checkRequestedSchema(p.requestedSchema);
      } catch (err) {
        throw serverFault(doc, err instanceof WireError ? err.message : 'an invalid requested schema', { key });
      }
      items.push({
        key,
        kind: 'form',
        answerBy: req.answers?.forms === true && (formsByRuntime || endpointClient) ? 'runtime' : 'person',
        message,
        requestedSchema: schema,
      });
    }
    return items;
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
    const responses: Record<string, unknown> = {};
    const given = req.inputResponses ?? {};
    for (const key of Object.keys(given)) {
      const item = items.find((i) => i.key === key);
      if (item === undefined || item.answerBy !== 'runtime') {
        throw new WireError(
          ErrorCodes.invalidInput,
          `inputResponses.${key.slice(0, 64)}: the runtime answers only the questions the input request gave it`,
          {
            field: `inputResponses.${key.slice(0, 64)}`,
          },
        );
      }
    }
    for (const item of items) {
      if (item.answerBy !== 'runtime' || storedForRuntime(found, item)) continue;
      const v = given[item.key];
      if (v === undefined) {
        throw new WireError(
          ErrorCodes.invalidInput,
          `inputResponses.${item.key}: the runtime must answer this question of ${doc.name}`,
          { field: `inputResponses.${item.key}`, inputRequestId: id },
        );
      }
      responses[item.key] = checkRuntimeAnswer(item, v, `inputResponses.${item.key}`);
    }
    let requestState: string | undefined;
    if (found.sealedState !== undefined) {
      const dot = found.sealedState.indexOf('.');
      try {
        requestState = this.deps.box.open(
          {
            keyId: found.sealedState.slice(0, dot),
            ciphertext: Buffer.from(found.sealedState.slice(dot + 1), 'base64'),
          },
          stateAad(req.account, id),
        );
      } catch {
        this.rounds?.add(1, { outcome: 'refused', reason: 'tampered' });
        throw refused(
          doc,
          'tampered',
          'the stored state of the input request does not open (it was altered); ask again by calling the tool afresh',
          { inputRequestId: id },
        );
      }
    }
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
    for (const item of items) {
      const stored = storedForRuntime(out.record, item);
      if (item.answerBy !== 'person' && !stored) continue;
      let raw: string | undefined;
      try {
        raw = this.deps.store.openAnswer(out.record, item.key);
      } catch {
        this.rounds?.add(1, { outcome: 'refused', reason: 'tampered' });
        throw refused(
          doc,
          'tampered',
          "a person's stored answer does not open (it was altered); ask again by calling the tool afresh",
          { inputRequestId: id },
        );
      }
      if (raw === undefined) responses[item.key] = { action: 'cancel' };
      else
        responses[item.key] = stored
          ? checkRuntimeAnswer(item, JSON.parse(raw), item.key)
          : (JSON.parse(raw) as ElicitAnswer);
    }
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

  private refusal(doc: InputTarget, id: string, reason: InputConsumeReason): WireError {
    this.rounds?.add(1, { outcome: 'refused', reason });
    return refused(doc, reason, REFUSALS[reason], { inputRequestId: id });
  }
}

/** The questions (`inputRequests`, by key) and the opaque `requestState` of an `input_required` result. */
export function inputRoundOf(result: unknown): {
  inputRequests: Record<string, { method: string; params?: unknown }>;
  requestState?: string;
} {
  const r = result as { inputRequests?: unknown; requestState?: unknown };
  const inputRequests: Record<string, { method: string; params?: unknown }> = {};
  if (isMap(r.inputRequests)) {
    for (const [key, v] of Object.entries(r.inputRequests)) {
      inputRequests[key] =
        isMap(v) && typeof v.method === 'string'
          ? { method: v.method, ...(v.params !== undefined ? { params: v.params } : {}) }
          : { method: '' };
    }
  }
  return { inputRequests, ...(typeof r.requestState === 'string' ? { requestState: r.requestState } : {}) };
}

/** The typed `input_required` of a recorded round: what to answer, by whom, until when. */
export function inputRequiredError(doc: InputTarget, record: InputRecord, items: InputRequestItem[]): WireError {
  const first = items.find((i): i is Extract<InputRequestItem, { message: string }> => 'message' in i);
  const forPerson = items.some((i) => i.answerBy === 'person');
  const question = first?.message ? `: "${first.message.slice(0, 200)}"` : '';
  const who = forPerson ? 'a person answers it' : 'the runtime answers it';
  return new WireError(
    ErrorCodes.inputRequired,
    `${doc.name} asks for input before it can finish${question}; ${who} (input request ${record.id}), then re-send the same call with inputRequestId`,
    {
      inputRequestId: record.id,
      tool: doc.name,
      server: doc.server,
      round: record.round,
      forPerson,
      requests: items,
      expiresAt: new Date(record.expiresAt).toISOString(),
    },
  );
}
