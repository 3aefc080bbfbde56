import { ErrorCodes, WireError, invalidInput } from '@mcpx/contracts';
import { publicKeyFromPrincipal } from '@mcpx/envelope';
import type { SignerRole } from '../repositories/accounts.repository.js';
import type { ActionHandler } from './context.js';

const ROLES: readonly SignerRole[] = ['OWNER', 'AGENT', 'WRITER'];

/**
 * `AuthorizeSigner {principal, role}` → `{signer: {principal, role}}`: lets another key act for
 * the account (OWNER, WRITER or AGENT). Setting it again changes the role. Only an OWNER may.
 */
export const authorizeSigner: ActionHandler = async (deps, caller, action) => {
  const { principal, role } = action;
  if (typeof principal !== 'string' || publicKeyFromPrincipal(principal) === null) {
    throw invalidInput('principal', 'must be an ed25519 public key (base64url, 43 chars)');
  }
  if (typeof role !== 'string' || !ROLES.includes(role as SignerRole)) throw invalidInput('role', 'must be OWNER, WRITER or AGENT');
  if (principal === caller.account) {
    throw new WireError(ErrorCodes.conflict, 'principal: the account key is always its own OWNER', { field: 'principal' });
  }
  await deps.db.transaction().execute(async (trx) => {
    await deps.accounts.ensure(caller.account, trx);
    await deps.accounts.authorizeSigner(caller.account, principal, role as SignerRole, trx);
  });
  return { signer: { principal, role } };
};
