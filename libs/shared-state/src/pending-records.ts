import type { Redis } from 'ioredis';
import { LEDGER_LUA, ledgerKeys, type LedgerKeys, type PendingKeys } from './pending-caps.js';

/** At most this many pending records are listed at once. */
const LIST_MAX = 200;

/** What every waiting record holds that the shared index reads need. */
export interface WaitingRecord {
  status: string;
  createdAt: number;
  expiresAt: number;
}

/**
 * The Redis keys of one kind of record that waits for a person (approvals, input requests): the
 * record, the account's and each agent's pending index, every account's index and the two bytes
 * ledgers. `one` names a record (`<prefix><one>:<account>:<id>`), `many` the indexes and ledgers
 * (`<prefix><many>:<account>`, `<prefix><many>-agent:…`, `<prefix><many>-pending-all`, …).
 */
export class PendingRecordKeys {
  constructor(
    private readonly prefix: string,
    private readonly one: string,
    private readonly many: string,
  ) {}

  record(account: string, id: string): string {
    return `${this.prefix}${this.one}:${account}:${id}`;
  }

  /** The account's pending index, scored by deadline. */
  index(account: string): string {
    return `${this.prefix}${this.many}:${account}`;
  }

  /** Every account's pending index (the waiting gauge's). */
  allPending(): string {
    return `${this.prefix}${this.many}-pending-all`;
  }

  /** The prefix of the account's agents' pending indexes (a script appends the record's agent). */
  agentIndexPrefix(account: string): string {
    return `${this.prefix}${this.many}-agent:${account}:`;
  }

  /** The bytes ledgers of the account's and every account's waiting records. */
  ledgers(account: string): { account: LedgerKeys; all: LedgerKeys } {
    return {
      account: ledgerKeys(`${this.prefix}${this.many}-bytes:${account}`),
      all: ledgerKeys(`${this.prefix}${this.many}-bytes-all`),
    };
  }

  /**
   * The six keys a transition that stops a record waiting takes, in the order the stores' scripts
   * read them: the record, the account's index, the account's bytes ledger, every account's.
   */
  settling(account: string, id: string): [string, string, string, string, string, string] {
    const ledgers = this.ledgers(account);
    return [
      this.record(account, id),
      this.index(account),
      ledgers.account.set,
      ledgers.account.sizes,
      ledgers.all.set,
      ledgers.all.sizes,
    ];
  }

  /** Where a new record of `agent` and its indexes and ledgers go ({@link createPending}'s keys). */
  forCreate(account: string, agent: string, id: string): PendingKeys {
    const ledgers = this.ledgers(account);
    return {
      record: this.record(account, id),
      accountIndex: this.index(account),
      agentIndex: `${this.agentIndexPrefix(account)}${agent}`,
      allIndex: this.allPending(),
      accountLedger: ledgers.account,
      allLedger: ledgers.all,
    };
  }
}

/**
 * The opening of a script that stops a record waiting (a decision, a complete answer), over the
 * keys of {@link PendingRecordKeys.settling}: it answers `unknown` for no record, `decided` for
 * one no longer pending, and `expired` (unlisting it) for one past its deadline; else `r` is the
 * record, `now` the time, and `unlist()` takes it out of its indexes and ledgers. The arguments
 * are Lua expressions: the agents' index prefix, every account's index and the record's member
 * there.
 */
export function settlePendingLua(agentIndexPrefix: string, allIndex: string, allMember: string): string {
  return `${LEDGER_LUA}
local raw = redis.call('GET', KEYS[1])
if not raw then return {'unknown'} end
local r = cjson.decode(raw)
if r.status ~= 'pending' then return {'decided', raw} end
local now = tonumber(ARGV[1])
local function unlist()
  redis.call('ZREM', KEYS[2], r.id)
  redis.call('ZREM', ${agentIndexPrefix} .. r.agent, r.id)
  redis.call('ZREM', ${allIndex}, ${allMember})
  release(KEYS[3], KEYS[4], r.id)
  release(KEYS[5], KEYS[6], ${allMember})
end
if now >= r.expiresAt then
  unlist()
  return {'expired', raw}
end
`;
}

/** How many records wait for a person across every account (pending, unexpired): the past ones are trimmed first. */
export async function countAllPending(redis: Redis, keys: PendingRecordKeys, now: number): Promise<number> {
  const out = await redis.multi().zremrangebyscore(keys.allPending(), '-inf', now).zcard(keys.allPending()).exec();
  const card = out?.[1];
  if (card === undefined || card[0] !== null) throw card?.[0] ?? new Error('the pending count was not read');
  return Number(card[1]);
}

/** The account's records still `pending` and unexpired, oldest first (at most {@link LIST_MAX}). */
export async function listAccountPending<R extends WaitingRecord>(
  redis: Redis,
  keys: PendingRecordKeys,
  account: string,
  now: number,
  parse: (raw: string) => R,
): Promise<R[]> {
  const index = keys.index(account);
  await redis.zremrangebyscore(index, '-inf', now);
  const ids = await redis.zrangebyscore(index, `(${now}`, '+inf', 'LIMIT', 0, LIST_MAX);
  if (ids.length === 0) return [];
  const raws = await redis.mget(ids.map((id) => keys.record(account, id)));
  return raws
    .filter((r): r is string => r !== null)
    .map(parse)
    .filter((r) => r.status === 'pending' && r.expiresAt > now)
    .sort((a, b) => a.createdAt - b.createdAt);
}

/** What a waiting record is bound to: the call it was made for (the one a person looks at), and nothing else. */
export interface CallBinding {
  agent: string;
  run: string;
  /** The tool's projected name, as the agent called it. */
  tool: string;
  /** Hex sha-256 of the canonical encoding of the call's arguments. */
  argsHash: string;
}

/**
 * The script of a record's one use by the call it was made for (KEYS[1] the record; ARGV: now,
 * agent, run, tool, argsHash): `unknown`, `used` (a replay says so), `refused` (a status that
 * stays refused until the deadline, e.g. a denial), `expired`, `pending` (not `usable` yet) or
 * `mismatch` (another call; told before `pending` when `bindingFirst`); else the record is marked
 * used, keeping its expiry, and returned.
 */
export function consumeLua(usable: string, opts: { refused?: string; bindingFirst: boolean }): string {
  const refused =
    opts.refused === undefined ? '' : `if r.status == '${opts.refused}' then return {'${opts.refused}', raw} end\n`;
  const pending = `if r.status ~= '${usable}' then return {'pending', raw} end\n`;
  const mismatch =
    "if r.agent ~= ARGV[2] or r.run ~= ARGV[3] or r.tool ~= ARGV[4] or r.argsHash ~= ARGV[5] then return {'mismatch', raw} end\n";
  return `
local raw = redis.call('GET', KEYS[1])
if not raw then return {'unknown'} end
local r = cjson.decode(raw)
if r.status == 'used' then return {'used', raw} end
${refused}local now = tonumber(ARGV[1])
if now >= r.expiresAt then return {'expired', raw} end
${opts.bindingFirst ? mismatch + pending : pending + mismatch}r.status = 'used'
r.usedAt = now
local enc = cjson.encode(r)
redis.call('SET', KEYS[1], enc, 'KEEPTTL')
return {'ok', enc}
`;
}

/** Runs a {@link consumeLua} script on `key` for `binding`: the record used, or why not (with the record as stored, when there is one). */
export async function consumeRecord<R, Reason extends string>(
  redis: Redis,
  script: string,
  key: string,
  now: number,
  binding: CallBinding,
): Promise<{ ok: true; record: R } | { ok: false; reason: Reason; record?: R }> {
  const out = (await redis.eval(script, 1, key, now, binding.agent, binding.run, binding.tool, binding.argsHash)) as [
    string,
    string?,
  ];
  const record = out[1] === undefined ? undefined : (JSON.parse(out[1]) as R);
  if (out[0] === 'ok') return { ok: true, record: record as R };
  return { ok: false, reason: out[0] as Reason, ...(record !== undefined ? { record } : {}) };
}
