import type { Redis } from 'ioredis';
import { ErrorCodes, WireError, type ActionEnvelope } from '@mcpx/contracts';
import { ENVELOPE_MAX_SKEW_MS, parseEnvelope, verifySignature } from '@mcpx/envelope';
import type { AccountsRepository } from '../accounts/accounts.repository.js';
import type { Caller } from '../actions/index.js';

/** The envelope's shape (it lives with the envelope, so tests and the fuzzers reach it). */
export { parseEnvelope };

/**
 * Authenticates a signed envelope: time window, signature, the account (one an operator created,
 * when accounts are closed), nonce (never twice, kept in Redis beyond the window) and the signer's
 * authority over the account. The nonce is burnt only after
 * the signature checks, so a forged envelope cannot burn someone's nonce.
 */
export async function authenticate(
  envelope: ActionEnvelope,
  deps: { redis: Redis; redisPrefix: string; accounts: AccountsRepository; now?: number },
): Promise<Caller> {
  const now = deps.now ?? Date.now();
  if (Math.abs(now - envelope.ts) > ENVELOPE_MAX_SKEW_MS) {
    throw new WireError(ErrorCodes.unauthenticated, 'ts: outside the ±30 s window; check the clock', { field: 'ts' });
  }
  if (!verifySignature(envelope))
    throw new WireError(ErrorCodes.unauthenticated, 'sig: signature does not verify', { field: 'sig' });
  // With accounts closed (ACCOUNTS=closed) only an operator creates them: an envelope of any
  // other account is refused before its nonce is kept or anything else is written.
  if (!(await deps.accounts.admits(envelope.account))) {
    throw new WireError(ErrorCodes.forbidden, 'account: no such account here; accounts are created by the operator', {
      field: 'account',
    });
  }
  const fresh = await deps.redis.set(
    `${deps.redisPrefix}nonce:${envelope.signer}:${envelope.nonce}`,
    '1',
    'PX',
    ENVELOPE_MAX_SKEW_MS * 4,
    'NX',
  );
  if (fresh !== 'OK') throw new WireError(ErrorCodes.unauthenticated, 'nonce: already used', { field: 'nonce' });
  // The account's own key is its OWNER. Its row is created by the first action that writes
  // (after that action's validation), so a refused action writes nothing, not even an account.
  if (envelope.signer === envelope.account)
    return { account: envelope.account, signer: envelope.signer, role: 'OWNER' };
  const role = await deps.accounts.signerRole(envelope.account, envelope.signer);
  if (role === null)
    throw new WireError(ErrorCodes.forbidden, 'signer: not a signer of this account', { field: 'signer' });
  return { account: envelope.account, signer: envelope.signer, role };
}
