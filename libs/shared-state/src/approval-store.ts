import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { PendingFullError, type PendingCaps, type PendingScope, type PendingUnit } from './pending-caps.js';
import { PendingRecordStore, TOMBSTONE_MS } from './pending-record-store.js';
import { consumeLua, settlePendingLua, type CallBinding } from './pending-records.js';

/**
 * An approval (docs/limits.md#approvals-and-input-requests) waits for a human this long (ms) unless the operator says otherwise, and
 * once approved, the call may be re-sent for as long again from the decision.
 */
export const DEFAULT_APPROVAL_TTL_MS = 10 * 60_000;
/**
 * The arguments shown to the human are kept up to this many bytes of canonical JSON; a call whose
 * arguments are larger cannot be approved (nobody can approve what they were not shown).
 */
export const ARGUMENTS_SHOWN_MAX_BYTES = 64 * 1024;

/**
 * JSON with every object's keys sorted (recursively), two-space indented: the form a human is
 * shown and approves, whatever order the runtime wrote the keys in. The approval itself is bound
 * to the hash of the canonical CBOR encoding, which is key-order free too.
 */
export function canonicalArgumentsJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sort(value ?? {}), null, 2);
}
export const ApprovalStatuses = { pending: 'pending', approved: 'approved', denied: 'denied', used: 'used' } as const;
export type ApprovalStatus = (typeof ApprovalStatuses)[keyof typeof ApprovalStatuses];

/** What an approval is bound to: the call a human looks at, and nothing else. */
export type ApprovalBinding = CallBinding;

export interface ApprovalRecord extends ApprovalBinding {
  id: string;
  account: string;
  server: string;
  remoteName: string;
  /** The arguments as JSON, when within {@link ARGUMENTS_SHOWN_MAX_BYTES}. */
  argumentsJson?: string;
  status: ApprovalStatus;
  /** Epoch ms. */
  createdAt: number;
  /**
   * The deadline of the step the approval is at: while pending, the decision's (creation + TTL);
   * once approved, the use's (decision + TTL), so a late decision still leaves a full window to
   * re-send. A denial keeps the pending deadline (there is nothing left to use).
   */
  expiresAt: number;
  decidedAt?: number;
  decidedBy?: string;
  usedAt?: number;
}

export type DecideOutcome =
  | { ok: true; record: ApprovalRecord }
  | { ok: false; reason: 'unknown' | 'expired' | 'decided'; record?: ApprovalRecord };
export type ConsumeReason = 'unknown' | 'expired' | 'denied' | 'used' | 'pending' | 'mismatch';
export type ConsumeOutcome =
  { ok: true; record: ApprovalRecord } | { ok: false; reason: ConsumeReason; record?: ApprovalRecord };
/**
 * What the approval of a call re-sent without its id means ({@link ApprovalStore.claimByCall}):
 * `ok`, it was approved for exactly this call and is now used; `pending`, the owner has not
 * decided yet (the same approval, no new one); `denied`, refused until its deadline; `none`, no
 * live approval of this call (never asked, used, expired): ask for a new one.
 */
export type ClaimOutcome =
  | { ok: true; record: ApprovalRecord }
  | { ok: false; reason: 'pending' | 'denied'; record: ApprovalRecord }
  | { ok: false; reason: 'none' };

// KEYS[1] the record, KEYS[2] the account's pending index, KEYS[3..4] the account's bytes
// ledger, KEYS[5..6] every account's; ARGV: now, decision, decided by, the approved call's use
// deadline, how long an approved record is kept (ms), the prefix of the agents' pending indexes
// (the record names its agent; one Redis, not a cluster), the index of every account's pending
// approvals (the waiting gauge's). A decided approval no longer waits: its bytes are released,
// and its stored record drops the shown arguments (the answer still carries them), so what an
// account holds in Redis past its decisions is small.
const DECIDE = `${settlePendingLua('ARGV[6]', 'ARGV[7]', 'r.id')}r.status = ARGV[2]
r.decidedAt = now
r.decidedBy = ARGV[3]
if r.status == 'approved' then r.expiresAt = tonumber(ARGV[4]) end
local shown = r.argumentsJson
r.argumentsJson = nil
local stored = cjson.encode(r)
r.argumentsJson = shown
-- Unlisted first: that frees memory, so a full Redis (maxmemory) still takes the decision.
unlist()
if r.status == 'approved' then
  redis.call('SET', KEYS[1], stored, 'PX', ARGV[5])
else
  redis.call('SET', KEYS[1], stored, 'KEEPTTL')
end
return {'ok', cjson.encode(r)}
`;

/**
 * {@link ApprovalStore.create} refused: the agent (`scope: 'agent'`), its account (`'account'`)
 * or the deployment (`'global'`) has `max` approvals (`unit: 'count'`) or `max` bytes of them
 * (`'bytes'`) waiting for a human. Nothing was recorded.
 */
export class PendingApprovalsFullError extends PendingFullError {
  override readonly name = 'PendingApprovalsFullError';
  constructor(max: number, scope: PendingScope = 'agent', unit: PendingUnit = 'count') {
    super(max, scope, unit, 'approvals');
  }
}

// KEYS[1] the record; ARGV: now, agent, run, tool, argsHash. Used before expired: a replay says so.
const CONSUME = consumeLua('approved', { refused: 'denied', bindingFirst: false });

// KEYS[1] the call's index (its approval's id); ARGV: now, the account's record key prefix, agent,
// run, tool, argsHash. The approval of a call re-sent without its id: used here when approved
// (one step, so racing re-sends run it once), kept while pending, refused while denied; an index
// that names nothing live is dropped so the next re-send asks again.
const CLAIM = `
local id = redis.call('GET', KEYS[1])
if not id then return {'none'} end
local raw = redis.call('GET', ARGV[2] .. id)
if not raw then
  redis.call('DEL', KEYS[1])
  return {'none'}
end
local r = cjson.decode(raw)
if r.agent ~= ARGV[3] or r.run ~= ARGV[4] or r.tool ~= ARGV[5] or r.argsHash ~= ARGV[6] then return {'none'} end
local now = tonumber(ARGV[1])
if r.status == 'used' or now >= r.expiresAt then
  redis.call('DEL', KEYS[1])
  return {'none'}
end
if r.status == 'denied' then return {'denied', raw} end
if r.status ~= 'approved' then return {'pending', raw} end
r.status = 'used'
r.usedAt = now
local enc = cjson.encode(r)
redis.call('SET', ARGV[2] .. id, enc, 'KEEPTTL')
redis.call('DEL', KEYS[1])
return {'ok', enc}
`;

/** Approval ids: `apr_` and 128 random bits (a valid subject token and request field). */
function newApprovalId(): string {
  return `apr_${randomBytes(16).toString('base64url')}`;
}

/**
 * Approvals of `always_ask` calls, shared by every proxy and registry instance through Redis.
 * The proxy creates one when such a call stops and consumes it when the call comes back with it;
 * the registry lists and decides them for the owner. Every transition is one Lua script, so an
 * approval is used at most once however many proxies race, and a decision cannot cross a use.
 * Keys name the account, so no lookup of one account can reach another's approvals.
 */
export class ApprovalStore extends PendingRecordStore<ApprovalRecord> {
  constructor(
    redis: Redis,
    private readonly prefix: string,
    opts: { ttlMs?: number; now?: () => number } = {},
  ) {
    const kind = { one: 'approval', many: 'approvals' };
    super(redis, prefix, { names: kind, ttlMs: opts.ttlMs ?? DEFAULT_APPROVAL_TTL_MS, now: opts.now, parse });
  }

  /**
   * The index of one call's approval: the account, and a digest of the agent, the run, the tool
   * and the arguments' hash (a re-send of the same call finds it; nothing else does).
   */
  private callKey(account: string, binding: ApprovalBinding): string {
    const digest = createHash('sha256')
      .update([binding.agent, binding.run, binding.tool, binding.argsHash].join('\u0000'))
      .digest('base64url');
    return `${this.prefix}approval-call:${account}:${digest}`;
  }

  /**
   * Records a pending approval of one call. With caps (> 0: the agent's and the account's counts,
   * the account's bytes, the deployment's count and bytes) the waiting approvals are counted and
   * the new one recorded in one step (a Lua script): at a full cap nothing is recorded and
   * {@link PendingApprovalsFullError} (naming the scope, the unit and the cap) is thrown, however
   * many calls of however many agents and accounts race. Its bytes are its stored record's.
   */
  async create(
    input: ApprovalBinding & { account: string; server: string; remoteName: string; arguments: unknown },
    opts: PendingCaps = {},
  ): Promise<ApprovalRecord> {
    const now = this.now();
    const json = canonicalArgumentsJson(input.arguments);
    const record: ApprovalRecord = {
      id: newApprovalId(),
      account: input.account,
      agent: input.agent,
      run: input.run,
      tool: input.tool,
      argsHash: input.argsHash,
      server: input.server,
      remoteName: input.remoteName,
      status: ApprovalStatuses.pending,
      createdAt: now,
      expiresAt: now + this.ttlMs,
    };
    if (Buffer.byteLength(json) <= ARGUMENTS_SHOWN_MAX_BYTES) record.argumentsJson = json;
    const keep = this.ttlMs + TOMBSTONE_MS;
    const refused = await this.recordPending(record, keep, record.id, opts);
    if (refused !== undefined) throw new PendingApprovalsFullError(refused.max, refused.scope, refused.unit);
    // The call's index, for a re-send without the id: as long as the record may still be used
    // (a decision late in the pending window leaves a full window to re-send). Best effort: the
    // approval is recorded either way and works with its id; without the index (a full Redis) a
    // bare re-send asks for a new one rather than run.
    await this.redis
      .set(this.callKey(input.account, record), record.id, 'PX', 2 * this.ttlMs + TOMBSTONE_MS)
      .catch(() => undefined);
    return record;
  }

  /**
   * The approval of a call re-sent without its id (same agent, run, tool and arguments' hash as
   * the call it was asked for): used once when approved, else what stops the call
   * ({@link ClaimOutcome}). Two approvals asked at once for one call: the later is the one found.
   */
  async claimByCall(account: string, binding: ApprovalBinding): Promise<ClaimOutcome> {
    const out = (await this.redis.eval(
      CLAIM,
      1,
      this.callKey(account, binding),
      this.now(),
      this.keys.record(account, ''),
      binding.agent,
      binding.run,
      binding.tool,
      binding.argsHash,
    )) as [string, string?];
    if (out[0] === 'ok') return { ok: true, record: parse(out[1]) };
    if (out[0] === 'pending' || out[0] === 'denied') return { ok: false, reason: out[0], record: parse(out[1]) };
    return { ok: false, reason: 'none' };
  }

  /**
   * A human's decision on a pending, unexpired approval of the account. An approval starts the
   * window to use it: it expires `ttlMs` after the decision, however late the decision came.
   */
  async decide(account: string, id: string, decision: 'approved' | 'denied', by: string): Promise<DecideOutcome> {
    const now = this.now();
    const out = (await this.redis.eval(
      DECIDE,
      6,
      ...this.keys.settling(account, id),
      now,
      decision,
      by,
      now + this.ttlMs,
      this.ttlMs + TOMBSTONE_MS,
      this.keys.agentIndexPrefix(account),
      this.keys.allPending(),
    )) as [string, string?];
    return out[0] === 'ok'
      ? { ok: true, record: parse(out[1]) }
      : {
          ok: false,
          reason: out[0] as 'unknown' | 'expired' | 'decided',
          ...(out[1] ? { record: parse(out[1]) } : {}),
        };
  }

  /**
   * Uses an approved approval for the call it was given for, once. Anything else (unknown,
   * expired, denied, already used, not decided yet, or another run, tool or arguments) is
   * refused with the reason, and leaves the approval as it was.
   */
  async consume(account: string, id: string, binding: ApprovalBinding): Promise<ConsumeOutcome> {
    return this.consumeOnce<ConsumeReason>(CONSUME, account, id, binding);
  }
}

function parse(raw: string | undefined): ApprovalRecord {
  return JSON.parse(raw ?? 'null') as ApprovalRecord;
}
