import { ErrorCodes, WireError, invalidInput } from '@mcpx/contracts';
import { publicKeyFromPrincipal } from '@mcpx/envelope';
import type { Kysely } from 'kysely';
import type { Database } from '@mcpx/db';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { findAgent } from '../agents/agents.actions.js';
import type { ActionType } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import type { AccountsRepository } from '../accounts/accounts.repository.js';
import type { AgentsRepository } from '../agents/agents.repository.js';
import type { ActionHandler } from '../shared/action-handler.js';

/** What the signers' actions use: the account's signers, and its agents an AGENT signer is bound to. */
export interface SignersDeps {
  db: Db;
  accounts: AccountsRepository;
  agents: AgentsRepository;
  log: Logger;
}

type SignersAction<T extends ActionType> = ActionHandler<T, SignersDeps>;

/** The agents one AGENT signer may be bound to (a runtime serves a few agents, not a fleet). */
export const MAX_SIGNER_AGENTS = 64;

function principalOf(value: unknown): string {
  if (typeof value !== 'string' || publicKeyFromPrincipal(value) === null) {
    throw invalidInput('principal', 'must be an ed25519 public key (base64url, 43 chars)');
  }
  return value;
}

/**
 * `AuthorizeSigner {principal, role, agents?}` → `{signer: {principal, role, agents?}}`: lets
 * another key act for the account (OWNER, WRITER or AGENT). An AGENT signer is bound to the
 * agents it serves (`agents`: names or ids, 1 to 64, required for AGENT and refused for the other
 * roles), and may act for no other. Setting it again replaces role and agents. Only an OWNER may.
 */
export const authorizeSigner: SignersAction<'AuthorizeSigner'> = async (deps, caller, action) => {
  const principal = principalOf(action.principal);
  const { role } = action;
  if (principal === caller.account) {
    throw new WireError(ErrorCodes.conflict, 'principal: the account key is always its own OWNER', {
      field: 'principal',
    });
  }
  let agents: { id: string; name: string }[] | null = null;
  if (role === 'AGENT') {
    const refs = action.agents;
    if (refs === undefined || refs.length === 0)
      throw invalidInput('agents', 'an AGENT signer must be bound to the agents it acts for (1 or more names or ids)');
    if (refs.length > MAX_SIGNER_AGENTS) throw invalidInput('agents', `at most ${MAX_SIGNER_AGENTS} agents`);
    agents = [];
    for (const [i, ref] of refs.entries()) {
      try {
        const agent = await findAgent(deps, caller.account, ref);
        if (!agents.some((a) => a.id === agent.id)) agents.push({ id: agent.id, name: agent.name });
      } catch (error) {
        if (error instanceof WireError)
          throw new WireError(error.code, error.message.replace(/^agent:/, `agents[${i}]:`), { field: `agents[${i}]` });
        throw error;
      }
    }
  } else if (action.agents !== undefined) {
    throw invalidInput('agents', 'only an AGENT signer is bound to agents');
  }
  await deps.db.transaction().execute(async (trx) => {
    await deps.accounts.ensure(caller.account, trx);
    const before = await signerView(trx, caller.account, principal, true);
    await deps.accounts.authorizeSigner(caller.account, principal, role, agents?.map((a) => a.id) ?? null, trx);
    // With the change, in its transaction: the key (public), its role and agents; never more.
    await recordAudit(trx, {
      ...auditBy(caller),
      action: 'AuthorizeSigner',
      target: { kind: 'signer', name: principal },
      before,
      after: { role, ...(agents ? { agents: agents.map((a) => a.name) } : {}) },
    });
  });
  return { signer: { principal, role, ...(agents ? { agents: agents.map((a) => a.name) } : {}) } };
};

/**
 * `RevokeSigner {principal}` → `{revoked: boolean}`: the key may no longer act for the account;
 * the next envelope it signs is refused with `forbidden`. Only an OWNER may; the account key
 * itself cannot be revoked.
 */
export const revokeSigner: SignersAction<'RevokeSigner'> = async (deps, caller, action) => {
  const principal = principalOf(action.principal);
  if (principal === caller.account) {
    throw new WireError(ErrorCodes.conflict, 'principal: the account key is always its own OWNER', {
      field: 'principal',
    });
  }
  const revoked = await deps.db.transaction().execute(async (trx) => {
    const before = await signerView(trx, caller.account, principal, true);
    const gone = await trx
      .deleteFrom('registry.signers')
      .where('account_id', '=', caller.account)
      .where('principal', '=', principal)
      .executeTakeFirst();
    const removed = Number(gone.numDeletedRows) > 0;
    // A revoke of a key that was no signer changed nothing: nothing to record.
    if (removed)
      await recordAudit(trx, {
        account: caller.account,
        signer: caller.signer,
        role: caller.role,
        action: 'RevokeSigner',
        target: { kind: 'signer', name: principal },
        before,
        after: null,
      });
    return removed;
  });
  deps.log.info('signer revoked', { account: caller.account, signer: principal, revoked });
  return { revoked };
};

/**
 * A signer as the audit log keeps it: its role and, for an AGENT signer, the names of its agents
 * (null when the key is no signer of the account). `lock` holds its row to the end of `trx`.
 */
async function signerView(
  trx: Kysely<Database>,
  account: string,
  principal: string,
  lock: boolean,
): Promise<{ role: string; agents?: string[] } | null> {
  let q = trx
    .selectFrom('registry.signers')
    .select(['role', 'agents'])
    .where('account_id', '=', account)
    .where('principal', '=', principal);
  if (lock) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  if (row === undefined) return null;
  const ids = Array.isArray(row.agents) ? row.agents.filter((a): a is string => typeof a === 'string') : [];
  if (row.role !== 'AGENT') return { role: row.role };
  const named =
    ids.length === 0
      ? []
      : await trx
          .selectFrom('registry.agents')
          .select(['id', 'name'])
          .where('account_id', '=', account)
          .where('id', 'in', ids)
          .execute();
  const byId = new Map(named.map((a) => [a.id, a.name]));
  return { role: row.role, agents: ids.map((id) => byId.get(id) ?? id) };
}
