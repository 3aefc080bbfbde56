import type { Redis } from 'ioredis';

/**
 * Whose waiting queue a pending-approvals or pending-inputs cap counts: one agent's, one account's
 * (all its agents), or the deployment's (every account: what one Redis holds for all tenants).
 */
export type PendingScope = 'agent' | 'account' | 'global';
/** What a cap counts: waiting records, or the bytes they keep in Redis. */
export type PendingUnit = 'count' | 'bytes';

/**
 * The caps of one creation of something that waits for a person (an approval, an input request):
 * how many one agent, and one account across all its agents, may have waiting at once, how many
 * bytes of stored records the account may have waiting, and the same two across every account.
 * 0, negative or absent is no cap. The stores count and record in one Lua step, so racing calls —
 * of one agent, or of the account's many agents, over any number of proxies — never pass a cap.
 */
export interface PendingCaps {
  maxPendingPerAgent?: number;
  maxPendingPerAccount?: number;
  /** Bytes of waiting records (their stored JSON) one account may hold at once. */
  maxPendingBytesPerAccount?: number;
  /** Waiting records across every account. */
  maxPendingGlobal?: number;
  /** Bytes of waiting records across every account. */
  maxPendingBytesGlobal?: number;
}

/** A creation refused at a full cap: `max` of `what` (`unit: 'count'`) or `max` bytes of them (`'bytes'`) wait in `scope`. */
export class PendingFullError extends Error {
  constructor(
    readonly max: number,
    readonly scope: PendingScope,
    readonly unit: PendingUnit,
    what: string,
  ) {
    super(
      unit === 'count' ? `the ${scope} has ${max} ${what} waiting` : `the ${scope}'s waiting ${what} hold ${max} bytes`,
    );
  }
}

/** A cap as the stores' scripts take it: a whole number, 0 for none. */
export function capArg(max: number | undefined): number {
  return max !== undefined && Number.isFinite(max) && max > 0 ? Math.floor(max) : 0;
}

/**
 * A ledger of the bytes waiting records keep: a sorted set of members scored by their deadline,
 * and a hash of each member's bytes with their sum under `#`. `held` answers the sum of the
 * members not past their deadline without writing; `settle` drops the members past it (and their
 * bytes from the sum); `charge` adds a member; `release` takes one out early (a decision, a
 * complete answer). Only these touch a ledger, so the sum never drifts from its members.
 */
export const LEDGER_LUA = `
local function expired(ledger, sizes, now)
  local gone = redis.call('ZRANGEBYSCORE', ledger, '-inf', now)
  local freed = 0
  for _, m in ipairs(gone) do freed = freed + (tonumber(redis.call('HGET', sizes, m)) or 0) end
  return gone, freed
end
local function held(ledger, sizes, now)
  local _, freed = expired(ledger, sizes, now)
  return math.max(0, (tonumber(redis.call('HGET', sizes, '#')) or 0) - freed)
end
local function settle(ledger, sizes, now)
  local gone, freed = expired(ledger, sizes, now)
  if #gone == 0 then return end
  for _, m in ipairs(gone) do redis.call('HDEL', sizes, m) end
  redis.call('ZREMRANGEBYSCORE', ledger, '-inf', now)
  redis.call('HINCRBY', sizes, '#', -freed)
end
local function charge(ledger, sizes, member, deadline, bytes, keepMs)
  redis.call('ZADD', ledger, deadline, member)
  redis.call('HSET', sizes, member, bytes)
  redis.call('HINCRBY', sizes, '#', bytes)
  redis.call('PEXPIRE', ledger, keepMs)
  redis.call('PEXPIRE', sizes, keepMs)
end
local function release(ledger, sizes, member)
  if redis.call('ZREM', ledger, member) == 1 then
    local bytes = tonumber(redis.call('HGET', sizes, member)) or 0
    redis.call('HDEL', sizes, member)
    redis.call('HINCRBY', sizes, '#', -bytes)
  end
end
`;

// KEYS[1] the record, KEYS[2] the account's pending index, KEYS[3] the agent's, KEYS[4] every
// account's; all scored by the deadline (what is past it no longer waits, and is trimmed here).
// KEYS[5..6] the account's bytes ledger (set, sizes), KEYS[7..8] every account's.
// ARGV: now, the record, how long it is kept (ms), its deadline, its id, the agent's cap, the
// account's cap (0: none), its member in every account's index, the account's bytes cap, the
// global cap, the global bytes cap, the record's bytes. The counts and the creation are one step:
// racing calls never pass a cap. Returns 'ok', or the cap that is full (`<scope>` for a count,
// `<scope>_bytes` for bytes); nothing is written then.
// The caps are read without writing, and the record's SET is the first write: Redis refuses a
// script's first write when it is at maxmemory (a later one it lets through), so on a full Redis
// the script fails as a whole with its OOM error and nothing is written.
const CREATE_PENDING = `${LEDGER_LUA}
local now = tonumber(ARGV[1])
local bytes = tonumber(ARGV[12])
local live = '(' .. ARGV[1]
local agentMax = tonumber(ARGV[6])
if agentMax > 0 and redis.call('ZCOUNT', KEYS[3], live, '+inf') >= agentMax then return 'agent' end
local accountMax = tonumber(ARGV[7])
if accountMax > 0 and redis.call('ZCOUNT', KEYS[2], live, '+inf') >= accountMax then return 'account' end
local accountBytes = tonumber(ARGV[9])
if accountBytes > 0 and held(KEYS[5], KEYS[6], now) + bytes > accountBytes then return 'account_bytes' end
local globalMax = tonumber(ARGV[10])
if globalMax > 0 and redis.call('ZCOUNT', KEYS[4], live, '+inf') >= globalMax then return 'global' end
local globalBytes = tonumber(ARGV[11])
if globalBytes > 0 and held(KEYS[7], KEYS[8], now) + bytes > globalBytes then return 'global_bytes' end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
for i = 2, 4 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  redis.call('ZADD', KEYS[i], ARGV[4], i == 4 and ARGV[8] or ARGV[5])
  redis.call('PEXPIRE', KEYS[i], ARGV[3])
end
settle(KEYS[5], KEYS[6], now)
settle(KEYS[7], KEYS[8], now)
charge(KEYS[5], KEYS[6], ARGV[5], ARGV[4], bytes, ARGV[3])
charge(KEYS[7], KEYS[8], ARGV[8], ARGV[4], bytes, ARGV[3])
return 'ok'
`;

/** Where a waiting record, its three indexes and its two bytes ledgers live. */
export interface PendingKeys {
  record: string;
  accountIndex: string;
  agentIndex: string;
  /** Every account's index (the waiting gauges count it). */
  allIndex: string;
  /** The account's bytes ledger (members: ids). */
  accountLedger: LedgerKeys;
  /** Every account's bytes ledger (members: the all-index member). */
  allLedger: LedgerKeys;
}

/** A bytes ledger: its sorted set of members by deadline and its hash of sizes (see {@link LEDGER_LUA}). */
export interface LedgerKeys {
  set: string;
  sizes: string;
}

/** The ledger keys under a base key. */
export function ledgerKeys(base: string): LedgerKeys {
  return { set: `${base}:held`, sizes: `${base}:sizes` };
}

/** What {@link createPending} writes: the record's JSON, for how long, its deadline, its id. */
export interface PendingRecord {
  now: number;
  json: string;
  keepMs: number;
  deadline: number;
  id: string;
  /** Its member in every account's index (the id, or `<account>:<id>`). */
  allMember: string;
}

/** Which cap refused a creation: its scope, its unit and its value. */
export interface PendingRefusal {
  scope: PendingScope;
  unit: PendingUnit;
  max: number;
}

const REFUSALS: Record<string, { scope: PendingScope; unit: PendingUnit; cap: keyof PendingCaps }> = {
  agent: { scope: 'agent', unit: 'count', cap: 'maxPendingPerAgent' },
  account: { scope: 'account', unit: 'count', cap: 'maxPendingPerAccount' },
  account_bytes: { scope: 'account', unit: 'bytes', cap: 'maxPendingBytesPerAccount' },
  global: { scope: 'global', unit: 'count', cap: 'maxPendingGlobal' },
  global_bytes: { scope: 'global', unit: 'bytes', cap: 'maxPendingBytesGlobal' },
};

/**
 * Records a waiting record under every cap in one Redis step (the approval store's and the input
 * store's one way to create what waits for a person): undefined, or the cap that is full, in
 * which case nothing was written. The record's bytes (its stored JSON) are charged to the
 * account's and the deployment's ledgers until its deadline or its release.
 */
export async function createPending(
  redis: Redis,
  keys: PendingKeys,
  record: PendingRecord,
  caps: PendingCaps,
): Promise<PendingRefusal | undefined> {
  const out = await redis.eval(
    CREATE_PENDING,
    8,
    keys.record,
    keys.accountIndex,
    keys.agentIndex,
    keys.allIndex,
    keys.accountLedger.set,
    keys.accountLedger.sizes,
    keys.allLedger.set,
    keys.allLedger.sizes,
    record.now,
    record.json,
    record.keepMs,
    record.deadline,
    record.id,
    capArg(caps.maxPendingPerAgent),
    capArg(caps.maxPendingPerAccount),
    record.allMember,
    capArg(caps.maxPendingBytesPerAccount),
    capArg(caps.maxPendingGlobal),
    capArg(caps.maxPendingBytesGlobal),
    Buffer.byteLength(record.json),
  );
  if (out === 'ok') return undefined;
  const refusal = typeof out === 'string' ? REFUSALS[out] : undefined;
  if (refusal === undefined) throw new Error(`pending store: unexpected reply to create (${String(out)})`);
  return { scope: refusal.scope, unit: refusal.unit, max: capArg(caps[refusal.cap]) };
}
