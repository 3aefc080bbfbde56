import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { MAX_PENDING_SIGN_INS } from '@mcpx/contracts';
import type { Database } from '@mcpx/db';

/**
 * The bounds a new pending sign-in is held to besides the account's {@link MAX_PENDING_SIGN_INS}
 * (the configuration's `quotas`; 0 = no bound): per client document in one account, per
 * requesting address across accounts, and in all.
 */
export interface PendingSignInBounds {
  pendingSignInsPerClient: number;
  pendingSignInsPerAddress: number;
  pendingSignIns: number;
}

/** The limit a refused sign-in met (said in the refusal and counted as the step's outcome). */
export const PendingSignInLimits = {
  account: 'pending_sign_ins_per_account',
  client: 'pending_sign_ins_per_client',
  address: 'pending_sign_ins_per_address',
  total: 'pending_sign_ins',
} as const;
export type PendingSignInLimit = (typeof PendingSignInLimits)[keyof typeof PendingSignInLimits];

/**
 * Who asked for a sign-in, as stored: the SHA-256 (hex) of the client's address under a label of
 * its own (the address itself is not kept; the hash only tells one requester from another).
 */
export function requesterHash(address: string): string {
  return createHash('sha256').update(`oauth-sign-in-requester:${address}`, 'utf8').digest('hex');
}

export const NO_BOUNDS: PendingSignInBounds = {
  pendingSignInsPerClient: 0,
  pendingSignInsPerAddress: 0,
  pendingSignIns: 0,
};

/**
 * The first bound a new pending sign-in would go over, counted inside the transaction that would
 * create it (which holds the account row's lock and the requester's advisory lock).
 */
export async function pendingLimitFor(
  trx: Kysely<Database>,
  b: PendingSignInBounds,
  input: { account: string; clientId: string; requesterHash: string },
): Promise<PendingSignInLimit | undefined> {
  const perAccount = await trx
    .selectFrom('registry.oauth_sign_ins')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .select((eb) => eb.fn.countAll<number>().filterWhere('client_id', '=', input.clientId).as('client'))
    .where('account_id', '=', input.account)
    .where('status', '=', 'pending')
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirstOrThrow();
  if (Number(perAccount.n) >= MAX_PENDING_SIGN_INS) return PendingSignInLimits.account;
  if (b.pendingSignInsPerClient > 0 && Number(perAccount.client) >= b.pendingSignInsPerClient)
    return PendingSignInLimits.client;
  if (b.pendingSignInsPerAddress > 0 && (await countPending(trx, input.requesterHash)) >= b.pendingSignInsPerAddress)
    return PendingSignInLimits.address;
  if (b.pendingSignIns > 0 && (await countPending(trx)) >= b.pendingSignIns) return PendingSignInLimits.total;
  return undefined;
}

/** Pending sign-ins not yet expired, of every account: of one requester, or all (the partial indexes' rows). */
async function countPending(trx: Kysely<Database>, requester?: string): Promise<number> {
  let q = trx
    .selectFrom('registry.oauth_sign_ins')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'pending')
    .where('expires_at', '>', sql<Date>`now()`);
  if (requester !== undefined) q = q.where('requester_hash', '=', requester);
  return Number((await q.executeTakeFirstOrThrow()).n);
}
