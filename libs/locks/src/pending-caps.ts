import type { Redis } from 'ioredis';

/** Whose waiting queue a pending-approvals or pending-inputs cap counts. */
export type PendingScope = 'agent' | 'account';

/**
 * The caps of one creation of something that waits for a person (an approval, an input request):
 * how many one agent, and one account across all its agents, may have waiting at once. 0,
 * negative or absent is no cap. The stores count and record in one Lua step, so racing calls —
 * of one agent, or of the account's many agents, over any number of proxies — never pass a cap.
 */
export interface PendingCaps {
  maxPendingPerAgent?: number;
  maxPendingPerAccount?: number;
}

/** A cap as the stores' scripts take it: a whole number, 0 for none. */
export function capArg(max: number | undefined): number {
  return max !== undefined && Number.isFinite(max) && max > 0 ? Math.floor(max) : 0;
}

// KEYS[1] the record, KEYS[2] the account's pending index, KEYS[3] the agent's, KEYS[4] every
// account's (trimmed here and when counted: its size is what waits); all scored by the deadline.
// ARGV: now, the record, how long it is kept (ms), its deadline, its id, the agent's cap, the
// account's cap (0: none), its member in every account's index. The counts and the creation are
// one step: racing calls of one agent, or of many agents of one account, never pass a cap.
// Returns 'ok', or the scope whose cap is full ('agent', 'account'); nothing is written then.
const CREATE_PENDING = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local agentMax = tonumber(ARGV[6])
if agentMax > 0 and redis.call('ZCARD', KEYS[3]) >= agentMax then return 'agent' end
local accountMax = tonumber(ARGV[7])
if accountMax > 0 and redis.call('ZCARD', KEYS[2]) >= accountMax then return 'account' end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 'ok'
`;

/** Where a waiting record and its three indexes live. */
export interface PendingKeys {
  record: string;
  accountIndex: string;
  agentIndex: string;
  /** Every account's index (the waiting gauges count it). */
  allIndex: string;
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

/**
 * Records a waiting record under both caps in one Redis step (the approval store's and the input
 * store's one way to create what waits for a person): `ok`, or the scope whose cap is full, in
 * which case nothing was written.
 */
export async function createPending(redis: Redis, keys: PendingKeys, record: PendingRecord, caps: { perAgent: number; perAccount: number }): Promise<'ok' | PendingScope> {
  const out = await redis.eval(
    CREATE_PENDING,
    4,
    keys.record,
    keys.accountIndex,
    keys.agentIndex,
    keys.allIndex,
    record.now,
    record.json,
    record.keepMs,
    record.deadline,
    record.id,
    caps.perAgent,
    caps.perAccount,
    record.allMember,
  );
  if (out === 'ok' || out === 'agent' || out === 'account') return out;
  throw new Error(`pending store: unexpected reply to create (${String(out)})`);
}
