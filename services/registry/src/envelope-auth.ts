import type { Redis } from 'ioredis';
import { ErrorCodes, WireError, invalidInput, type ActionEnvelope } from '@mcpx/contracts';
import { ENVELOPE_MAX_SKEW_MS, verifySignature } from '@mcpx/envelope';
import type { AccountsRepository } from './repositories/accounts.repository.js';
import type { Caller } from './actions/index.js';

const NONCE_RE = /^[A-Za-z0-9_-]{8,64}$/;
const PRINCIPAL_RE = /^[A-Za-z0-9_-]{43}$/;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Checks the envelope's shape, naming the first malformed field. */
export function parseEnvelope(body: unknown): ActionEnvelope {
  if (!isPlainObject(body)) throw invalidInput('envelope', 'must be an object');
  const { signer, account, ts, nonce, action, sig } = body;
  if (typeof signer !== 'string' || !PRINCIPAL_RE.test(signer)) throw invalidInput('signer', 'must be an ed25519 principal (base64url, 43 chars)');
  if (typeof account !== 'string' || !PRINCIPAL_RE.test(account)) throw invalidInput('account', 'must be an account principal');
  if (typeof ts !== 'number' || !Number.isSafeInteger(ts)) throw invalidInput('ts', 'must be an integer (milliseconds since the epoch)');
  if (typeof nonce !== 'string' || !NONCE_RE.test(nonce)) throw invalidInput('nonce', 'must be 8-64 base64url characters');
  if (!isPlainObject(action) || typeof action.type !== 'string') throw invalidInput('action.type', 'is required');
  if (typeof sig !== 'string') throw invalidInput('sig', 'is required');
  for (const k of Object.keys(body)) {
    if (!['signer', 'account', 'ts', 'nonce', 'action', 'sig'].includes(k)) throw invalidInput(k, 'is not a field of the envelope');
  }
  return body as unknown as ActionEnvelope;
}

/**
 * Authenticates a signed envelope: time window, signature, nonce (never twice, kept in Redis
 * beyond the window) and the signer's authority over the account. The nonce is burnt only after
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
  if (!verifySignature(envelope)) throw new WireError(ErrorCodes.unauthenticated, 'sig: signature does not verify', { field: 'sig' });
  const fresh = await deps.redis.set(`${deps.redisPrefix}nonce:${envelope.signer}:${envelope.nonce}`, '1', 'PX', ENVELOPE_MAX_SKEW_MS * 4, 'NX');
  if (fresh !== 'OK') throw new WireError(ErrorCodes.unauthenticated, 'nonce: already used', { field: 'nonce' });
  // The account's own key is its OWNER. Its row is created by the first action that writes
  // (after that action's validation), so a refused action writes nothing, not even an account.
  if (envelope.signer === envelope.account) return { account: envelope.account, signer: envelope.signer, role: 'OWNER' };
  const role = await deps.accounts.signerRole(envelope.account, envelope.signer);
  if (role === null) throw new WireError(ErrorCodes.forbidden, 'signer: not a signer of this account', { field: 'signer' });
  return { account: envelope.account, signer: envelope.signer, role };
}
