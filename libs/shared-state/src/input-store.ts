import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { PendingFullError, type PendingCaps, type PendingScope, type PendingUnit } from './pending-caps.js';
import { PendingRecordStore, TOMBSTONE_MS } from './pending-record-store.js';
import { consumeLua, settlePendingLua, type CallBinding } from './pending-records.js';

/** An input request waits for its answer this long (ms), and once answered, the call may be re-sent for as long again. */
export const DEFAULT_INPUT_TTL_MS = 10 * 60_000;

export type InputRecordStatus = 'pending' | 'answered' | 'used';

/** What an input request is bound to: the call that stopped, and nothing else. */
export type InputBinding = CallBinding;

export interface InputRecord extends InputBinding {
  id: string;
  account: string;
  server: string;
  remoteName: string;
  round: number;
  era: 'modern' | 'legacy';
  /** The call passed the approval gate (an `always_ask` tool): its later rounds need no new approval. */
  approved: boolean;
  /** The embedded requests as shown (JSON of `InputRequestItem[]`): kept as a string so no script re-encodes it. */
  requestsJson: string;
  /** `,key1,key2,` — the keys a person answers. */
  personKeys: string;
  /** Person keys not answered yet. */
  remaining: number;
  /**
   * A person's answers by key, each the JSON of an `ElicitAnswer` sealed with the deployment's key
   * ring (`<keyId>.<base64 ciphertext>`, bound to the account, the request and the key): read one
   * with {@link InputStore.openAnswer}. Redis never holds what a person typed in the clear.
   */
  answers: Record<string, string>;
  /** The server's `requestState`, sealed by the proxy (`<keyId>.<base64 ciphertext>`); never shown, never unsealed outside the proxy. */
  sealedState?: string;
  /** Legacy: the proxy instance holding the server's pending `elicitation/create`. */
  holder?: string;
  status: InputRecordStatus;
  createdAt: number;
  /** While pending, the deadline for the answer; once answered, for re-sending the call. */
  expiresAt: number;
  answeredAt?: number;
  answeredBy?: string;
  usedAt?: number;
}

export type InputCreate = Omit<
  InputRecord,
  | 'id'
  | 'status'
  | 'createdAt'
  | 'expiresAt'
  | 'remaining'
  | 'answers'
  | 'personKeys'
  | 'answeredAt'
  | 'answeredBy'
  | 'usedAt'
> & {
  id?: string;
  personKeys: string[];
};

/** Why an answer was not taken; `changed`: another answer came since the record the caller expected (see {@link AnswerExpectation}). */
export type AnswerReason = 'unknown' | 'expired' | 'decided' | 'not_asked' | 'answered_already' | 'changed';
/**
 * What the caller read of the record before it answers: the answer is taken only while the record
 * still has `remaining` questions for a person, so what the caller wrote of it first (whether its
 * answer completes the request) is what happens.
 */
export interface AnswerExpectation {
  remaining: number;
}
export type AnswerOutcome =
  { ok: true; record: InputRecord; complete: boolean } | { ok: false; reason: AnswerReason; record?: InputRecord };
export type InputConsumeReason = 'unknown' | 'expired' | 'used' | 'pending' | 'mismatch';
export type InputConsumeOutcome =
  { ok: true; record: InputRecord } | { ok: false; reason: InputConsumeReason; record?: InputRecord };

// KEYS[1] the record, KEYS[2] the account's pending index, KEYS[3..4] the account's bytes ledger,
// KEYS[5..6] every account's; ARGV: now, key, the sealed answer, by, the re-send deadline once
// complete, how long an answered record is kept (ms), the index of every account's pending input
// requests (the waiting gauge's), the prefix of the account's agents' pending indexes (the record
// names its agent; one Redis, not a cluster), the questions the caller expects remaining ('' for
// any). A complete request no longer waits: its bytes are released.
const ANSWER = `${settlePendingLua('ARGV[8]', 'ARGV[7]', "r.account .. ':' .. r.id")}if not string.find(r.personKeys, ',' .. ARGV[2] .. ',', 1, true) then return {'not_asked', raw} end
if type(r.answers) ~= 'table' then r.answers = {} end
if r.answers[ARGV[2]] then return {'answered_already', raw} end
if ARGV[9] ~= '' and tonumber(ARGV[9]) ~= r.remaining then return {'changed', raw} end
r.answers[ARGV[2]] = ARGV[3]
r.remaining = r.remaining - 1
local enc
if r.remaining <= 0 then
  r.status = 'answered'
  r.answeredAt = now
  r.answeredBy = ARGV[4]
  r.expiresAt = tonumber(ARGV[5])
  enc = cjson.encode(r)
  redis.call('SET', KEYS[1], enc, 'PX', ARGV[6])
  unlist()
  return {'complete', enc}
end
enc = cjson.encode(r)
redis.call('SET', KEYS[1], enc, 'KEEPTTL')
return {'ok', enc}
`;

/**
 * {@link InputStore.create} refused: the agent (`scope: 'agent'`), its account (`'account'`) or
 * the deployment (`'global'`) has `max` input requests (`unit: 'count'`) or `max` bytes of them
 * (`'bytes'`) waiting for a person. Nothing was recorded.
 */
export class PendingInputsFullError extends PendingFullError {
  override readonly name = 'PendingInputsFullError';
  constructor(max: number, scope: PendingScope = 'agent', unit: PendingUnit = 'count') {
    super(max, scope, unit, 'input requests');
  }
}

/**
 * Seals and opens a person's answers (the deployment's `SecretBox`: AES-256-GCM over the key ring,
 * the same sealing as a server's `requestState`). The registry seals what a person answers, the
 * proxy opens it for the call it was asked for.
 */
export interface AnswerSealer {
  seal(plaintext: string, aad: string): { keyId: string; ciphertext: Uint8Array };
  /** Throws when the ciphertext does not open (altered, another key ring, another request). */
  open(sealed: { keyId: string; ciphertext: Uint8Array }, aad: string): string;
}

/** The additional data that binds a sealed answer to its account, input request and question. */
function answerAad(account: string, id: string, key: string): string {
  return `input-answer\u0000${account}\u0000${id}\u0000${key}`;
}

// KEYS[1] the record; ARGV: now, agent, run, tool, argsHash. Used before expired: a replay says so.
const CONSUME = consumeLua('answered', { bindingFirst: true });

/** Input request ids: `inp_` and 128 random bits (a valid subject token and request field). */
export function newInputRequestId(): string {
  return `inp_${randomBytes(16).toString('base64url')}`;
}

/**
 * Input requests of calls that stopped for input (2026-07-28 `input_required`, or a legacy
 * server's pushed `elicitation/create`), shared by every proxy and registry instance through
 * Redis, with expiry. The proxy creates one when a call stops and consumes it when the call comes
 * back with it; the registry lists them and records a person's answers. Every transition is one
 * Lua script, so an answer is used at most once however many proxies race, and bound to the
 * agent, run, tool and arguments of the call it was asked for. Keys name the account.
 */
export class InputStore extends PendingRecordStore<InputRecord> {
  constructor(
    redis: Redis,
    prefix: string,
    private readonly opts: { box: AnswerSealer; ttlMs?: number; now?: () => number },
  ) {
    const kind = { one: 'input', many: 'inputs' };
    super(redis, prefix, { names: kind, ttlMs: opts.ttlMs ?? DEFAULT_INPUT_TTL_MS, now: opts.now, parse });
  }

  /**
   * Records an input request. One with no question for a person (the runtime answers everything)
   * is `answered` at once, never listed and never counted. One for a person, with
   * `maxPendingPerAgent` or `maxPendingPerAccount` (> 0), is counted against the agent's and the
   * account's waiting requests and recorded in one step (a Lua script): at either cap nothing is
   * recorded and {@link PendingInputsFullError} (naming the scope and its cap) is thrown.
   */
  async create(input: InputCreate, opts: PendingCaps = {}): Promise<InputRecord> {
    const now = this.now();
    const { personKeys, id, ...rest } = input;
    const record: InputRecord = {
      ...rest,
      id: id ?? newInputRequestId(),
      personKeys: `,${personKeys.join(',')},`,
      remaining: personKeys.length,
      answers: {},
      status: personKeys.length === 0 ? 'answered' : 'pending',
      createdAt: now,
      expiresAt: now + this.ttlMs,
    };
    const keep = this.ttlMs * 2 + TOMBSTONE_MS;
    if (record.status !== 'pending') {
      record.answeredBy = 'runtime';
      await this.redis.set(this.keys.record(input.account, record.id), JSON.stringify(record), 'PX', keep);
      return record;
    }
    const refused = await this.recordPending(record, keep, `${input.account}:${record.id}`, opts);
    if (refused !== undefined) throw new PendingInputsFullError(refused.max, refused.scope, refused.unit);
    return record;
  }

  /**
   * A person's answer to one question (`key`) of a pending, unexpired input request. The last
   * answer completes it (`complete`): the call may then be re-sent for `ttlMs` from that moment.
   * With `expected`, refused (`changed`) when the record no longer is as the caller read it.
   */
  async answer(
    account: string,
    id: string,
    key: string,
    answerJson: string,
    by: string,
    expected?: AnswerExpectation,
  ): Promise<AnswerOutcome> {
    const now = this.now();
    const sealed = this.opts.box.seal(answerJson, answerAad(account, id, key));
    const out = (await this.redis.eval(
      ANSWER,
      6,
      ...this.keys.settling(account, id),
      now,
      key,
      `${sealed.keyId}.${Buffer.from(sealed.ciphertext).toString('base64')}`,
      by,
      now + this.ttlMs,
      this.ttlMs + TOMBSTONE_MS,
      this.keys.allPending(),
      this.keys.agentIndexPrefix(account),
      expected === undefined ? '' : expected.remaining,
    )) as [string, string?];
    if (out[0] === 'ok' || out[0] === 'complete')
      return { ok: true, record: parse(out[1]), complete: out[0] === 'complete' };
    return { ok: false, reason: out[0] as AnswerReason, ...(out[1] ? { record: parse(out[1]) } : {}) };
  }

  /**
   * A person's answer to question `key` of a record, opened (the JSON of an `ElicitAnswer`), or
   * undefined when not answered. Throws when the stored answer does not open (it was altered, or
   * moved from another request or question).
   */
  openAnswer(record: InputRecord, key: string): string | undefined {
    const sealed = record.answers[key];
    if (sealed === undefined) return undefined;
    const dot = sealed.indexOf('.');
    if (dot <= 0) throw new Error('a stored answer is not sealed');
    return this.opts.box.open(
      { keyId: sealed.slice(0, dot), ciphertext: Buffer.from(sealed.slice(dot + 1), 'base64') },
      answerAad(record.account, record.id, key),
    );
  }

  /**
   * Uses an answered input request for the call it was asked for, once. Anything else (unknown,
   * expired, already used, not answered yet, or another agent, run, tool or arguments) is refused
   * with the reason, and leaves the request as it was.
   */
  async consume(account: string, id: string, binding: InputBinding): Promise<InputConsumeOutcome> {
    return this.consumeOnce<InputConsumeReason>(CONSUME, account, id, binding);
  }
}

function parse(raw: string | undefined): InputRecord {
  const r = JSON.parse(raw ?? 'null') as InputRecord;
  // An empty map may come back from a script as an empty list.
  if (Array.isArray(r.answers) || r.answers === null || typeof r.answers !== 'object') r.answers = {};
  return r;
}
