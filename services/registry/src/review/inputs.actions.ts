import {
  ErrorCodes,
  WireError,
  checkElicitContent,
  invalidInput,
  type ElicitAnswer,
  type InputAnsweredEvent,
  type InputRequestItem,
  type InputRequestView,
} from '@mcpx/contracts';
import type { AnswerOutcome, InputRecord, InputStore } from '@mcpx/shared-state';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import type { ReviewAction, ReviewDeps } from './review-deps.js';
import { heldCallView } from './held-call.js';
import type { ActionInput, Caller } from '../shared/action-handler.js';

/** An input request as responses show it: the questions, never the server's state nor an answer's content. */
export function inputRequestView(r: InputRecord): InputRequestView {
  const view: InputRequestView = {
    ...heldCallView(r),
    round: r.round,
    era: r.era,
    requests: JSON.parse(r.requestsJson) as InputRequestItem[],
    status: r.status,
    answered: Object.keys(r.answers),
    createdAt: new Date(r.createdAt).toISOString(),
    expiresAt: new Date(r.expiresAt).toISOString(),
  };
  if (r.answeredAt !== undefined) view.answeredAt = new Date(r.answeredAt).toISOString();
  if (r.answeredBy !== undefined) view.answeredBy = r.answeredBy;
  return view;
}

function store(deps: ReviewDeps): InputStore {
  if (deps.inputs === undefined) throw new WireError(ErrorCodes.internal, 'input requests are not available here');
  return deps.inputs;
}

/** `ListInputRequests {}` → `{inputRequests}`: the account's input requests waiting for a person, oldest first. */
export const listInputRequests: ReviewAction<'ListInputRequests'> = async (deps, caller) => {
  const pending = await store(deps).listPending(caller.account);
  // A task's round asked of its caller alone waits for that caller, not for a person (docs/tasks.md#questions).
  const forPeople = pending.map(inputRequestView).filter((v) => v.requests.some((q) => q.answerBy === 'person'));
  return { inputRequests: forPeople };
};

/**
 * Tells the account's subscribers (the console, a waiting runtime) that a person answered every
 * question of an input request. Core NATS, at most once: the store stays the source of truth. No
 * answer's content goes out.
 */
function publishAnswered(deps: ReviewDeps, r: InputRecord): void {
  const event: InputAnsweredEvent = {
    account: r.account,
    inputRequestId: r.id,
    agent: r.agent,
    run: r.run,
    tool: r.tool,
    server: r.server,
    answeredBy: r.answeredBy ?? '',
    answeredAt: new Date(r.answeredAt ?? Date.now()).toISOString(),
    expiresAt: new Date(r.expiresAt).toISOString(),
  };
  deps.bus.notify<InputAnsweredEvent>(deps.bus.subjects.inputAnswered(r.account), event);
}

/**
 * `AnswerInputRequest {id, action: 'accept'|'decline'|'cancel', content?, key?}` → `{inputRequest}`.
 * A person's answer to one question of a pending input request: `content` (with `accept`) is
 * checked against the question's requested schema (bounded); a URL question is accepted once the
 * person says it is done, with no content. `key` names the question when the round asks several
 * (default: the only one still unanswered). Once every question is answered, the runtime may re-send
 * the call with `inputRequestId`, once. OWNER only.
 */
export const answerInputRequest: ReviewAction<'AnswerInputRequest'> = async (deps, caller, action) => {
  const inputs = store(deps);
  const id = action.id ?? action.inputRequestId;
  if (id === undefined) throw invalidInput('id', 'must be an input request id (inp_…)');
  // Another answer to the same request between the read and the write: read it again (a few times).
  for (let attempt = 1; ; attempt++) {
    const answered = await answerAsRead(deps, inputs, caller, action, id);
    if (answered === 'changed' && attempt < ANSWER_ATTEMPTS) continue;
    if (answered === 'changed') throw changedMeanwhile(id);
    const { out, key, answer } = answered;
    deps.log.info('input request answered', {
      account: caller.account,
      inputRequest: id,
      key,
      action: answer.action,
      tool: out.record.tool,
      run: out.record.run,
      complete: out.complete,
    });
    if (out.complete) publishAnswered(deps, out.record);
    return { inputRequest: inputRequestView(out.record) };
  }
};

/** How many times an answer is tried when other answers to the same request keep coming in between. */
const ANSWER_ATTEMPTS = 3;

/** Raised in the entry's transaction when the store found the record changed since it was read: rolls the entry back. */
class AnswerRaced extends Error {}

/**
 * One answer to the record as read now. The answer lives in Redis, out of reach of Postgres'
 * transactions: its audit entry (never the content a person typed) is written first, in a
 * transaction that commits only once Redis holds the answer, so Postgres lost at the entry stores
 * no answer. The entry says whether the answer completes the request, as the record read says;
 * the store takes the answer only while the record is still as read (`changed` otherwise, and the
 * entry is rolled back). Lost at the commit itself, the answer stands without its entry.
 */
async function answerAsRead(
  deps: ReviewDeps,
  inputs: InputStore,
  caller: Caller,
  action: ActionInput<'AnswerInputRequest'>,
  id: string,
): Promise<{ out: Extract<AnswerOutcome, { ok: true }>; key: string; answer: ElicitAnswer } | 'changed'> {
  const record = await inputs.get(caller.account, id);
  if (record === null) throw new WireError(ErrorCodes.notFound, `id: no input request ${id}`, { field: 'id' });
  const items = JSON.parse(record.requestsJson) as InputRequestItem[];
  const key = questionKey(id, record, items, action.key);
  const answer = checkedAnswer(
    items.find((i) => i.key === key)!,
    action,
  );
  try {
    const out = await deps.heldEntries.transaction(deps.db, caller.account, async (trx) => {
      // A refused answer (answered, expired, changed meanwhile) rolls the entry back.
      await recordAudit(trx, {
        ...auditBy(caller),
        action: 'AnswerInputRequest',
        target: { kind: 'input', name: id },
        after: {
          action: answer.action,
          key,
          tool: record.tool,
          server: record.server,
          agent: record.agent,
          run: record.run,
          complete: record.remaining <= 1,
        },
      });
      const out = await inputs.answer(caller.account, id, key, JSON.stringify(answer), caller.signer, {
        remaining: record.remaining,
      });
      if (!out.ok && out.reason === 'changed') throw new AnswerRaced();
      if (!out.ok) throw refusedAnswer(out, id, key);
      return out;
    });
    return { out, key, answer };
  } catch (err) {
    if (err instanceof AnswerRaced) return 'changed';
    throw err;
  }
}

/** The question an answer is for: the one `given` names (a person's), else the only one still open. */
function questionKey(
  id: string,
  record: InputRecord,
  items: readonly InputRequestItem[],
  given: string | undefined,
): string {
  if (given !== undefined) {
    if (!items.some((i) => i.key === given && i.answerBy === 'person'))
      throw invalidInput('key', `must name a question of ${id} that a person answers`);
    return given;
  }
  const open = items.filter((i) => i.answerBy === 'person' && !Object.hasOwn(record.answers, i.key));
  if (open.length === 1) return open[0]!.key;
  if (open.length === 0) {
    throw new WireError(
      ErrorCodes.conflict,
      `id: input request ${id} has no question left to answer (${record.status})`,
      { field: 'id', reason: 'decided', status: record.status },
    );
  }
  throw invalidInput(
    'key',
    `input request ${id} asks ${open.length} questions; name one (${open.map((i) => i.key).join(', ')})`,
  );
}

/** The answer as stored: content only with `accept` of a form question, checked against its schema (bounded). */
function checkedAnswer(item: InputRequestItem, action: ActionInput<'AnswerInputRequest'>): ElicitAnswer {
  const verb = action.action;
  if (verb !== 'accept' && action.content !== undefined) throw invalidInput('content', 'is given only with accept');
  if (item.kind === 'url' && action.content !== undefined)
    throw invalidInput('content', 'a URL question takes no content: accept it once the person is done in the browser');
  return verb === 'accept' && item.kind === 'form'
    ? { action: verb, content: checkElicitContent(item.requestedSchema, action.content ?? {}, 'content') }
    : { action: verb };
}

/** Other answers to the request kept coming while this one was given: retryable. */
function changedMeanwhile(id: string): WireError {
  return new WireError(ErrorCodes.conflict, `id: input request ${id} changed while it was answered; try again`, {
    field: 'id',
    reason: 'changed',
  });
}

/** Why the store did not take the answer, as the typed error naming the field. */
function refusedAnswer(out: Extract<AnswerOutcome, { ok: false }>, id: string, key: string): WireError {
  switch (out.reason) {
    case 'unknown':
      return new WireError(ErrorCodes.notFound, `id: no input request ${id}`, { field: 'id' });
    case 'expired':
      return new WireError(ErrorCodes.conflict, `id: input request ${id} expired`, { field: 'id', reason: 'expired' });
    case 'not_asked':
      return invalidInput('key', `input request ${id} asks no question ${key} of a person`);
    case 'answered_already':
      return new WireError(ErrorCodes.conflict, `key: question ${key} of input request ${id} was already answered`, {
        field: 'key',
        reason: 'answered',
      });
    case 'changed':
      return changedMeanwhile(id);
    case 'decided':
      return new WireError(
        ErrorCodes.conflict,
        `id: input request ${id} was already answered (${out.record?.status ?? 'answered'})`,
        {
          field: 'id',
          reason: 'decided',
          ...(out.record ? { status: out.record.status } : {}),
        },
      );
  }
}
