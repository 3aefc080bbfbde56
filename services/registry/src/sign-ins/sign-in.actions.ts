import { CONTINUE_PATH, ErrorCodes, SIGN_IN_ID_RE, WireError, invalidInput } from '@mcpx/contracts';
import type { ActionType } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import type { ActionHandler } from '../shared/action-handler.js';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { SignInDecisionsRepository } from './sign-in-decisions.repository.js';

/** What the sign-in actions use: the sign-ins' tables, and where the authorization server is. */
export interface SignInActionDeps {
  db: Db;
  log: Logger;
  /**
   * The authorization server's public URL (its issuer, `AUTHORIZATION_SERVER_PUBLIC_URL`) when it
   * is not on the registry's own origin: `continueUrl` is then absolute. Absent: a path.
   */
  authorizationServerUrl?: string;
}

type SignInAction<T extends ActionType> = ActionHandler<T, SignInActionDeps>;

function hostOf(url: string): string {
  return URL.canParse(url) ? new URL(url).host : '';
}

/**
 * `ListSignInRequests {}` → `{signIns}`: the account's OAuth sign-ins to its agents' endpoints
 * waiting for a decision, oldest first: the client (its id, its name from its metadata document,
 * which nobody verified, and the document's host), where the browser goes back to, the agent.
 * Never a code, a cookie or a nonce. OWNER only.
 */
export const listSignInRequests: SignInAction<'ListSignInRequests'> = async (deps, caller) => {
  const rows = await new SignInDecisionsRepository(deps.db).listPending(caller.account);
  return {
    signIns: rows.map((r) => ({
      id: r.id,
      agent: { id: r.agent_id, name: r.agent_name },
      client: { id: r.client_id, name: r.client_name, nameVerified: false, host: hostOf(r.client_id) },
      redirectUri: r.redirect_uri,
      redirectHost: hostOf(r.redirect_uri),
      resource: r.resource,
      createdAt: r.created_at.toISOString(),
      expiresAt: r.expires_at.toISOString(),
    })),
  };
};

/**
 * `DecideSignIn {id, decision: 'approve'|'deny'}` → `{id, decision, continueUrl}`: the owner's
 * answer to a pending sign-in. `continueUrl` (single use; on the authorization server's origin,
 * a path when that is the registry's own, as the console's action URL is) must be opened by the browser that started the sign-in: it sends that browser to the client
 * with a code (approve) or `access_denied` (deny). An unknown or expired id is `not_found`, one
 * decided already `conflict`. OWNER only.
 */
export const decideSignIn: SignInAction<'DecideSignIn'> = async (deps, caller, action) => {
  const id = action.id;
  if (typeof id !== 'string' || !SIGN_IN_ID_RE.test(id))
    throw invalidInput('id', 'must be a sign-in id (si_ and 32 hex digits)');
  const decision = action.decision;
  if (decision !== 'approve' && decision !== 'deny') throw invalidInput('decision', 'must be approve or deny');
  // The entry commits with the decision: Postgres lost at it stores neither (the answer's
  // `unavailable` says nothing was written, and it is true).
  const out = await new SignInDecisionsRepository(deps.db).decide(
    caller.account,
    id,
    decision === 'approve',
    caller.signer,
    (decided, trx) =>
      recordAudit(trx, {
        ...auditBy(caller),
        action: 'DecideSignIn',
        target: { kind: 'agent', name: decided.agent },
        after: { signIn: id, decision, client: decided.clientId },
      }),
  );
  if (out === 'not_found') throw new WireError(ErrorCodes.notFound, `id: no pending sign-in ${id}`, { field: 'id' });
  if (out === 'decided')
    throw new WireError(ErrorCodes.conflict, `id: sign-in ${id} was decided already`, { field: 'id' });
  deps.log.info('oauth sign-in decided', { account: caller.account, signIn: id, decision, signer: caller.signer });
  const q = new URLSearchParams({ id, nonce: out.nonce });
  return { id, decision, continueUrl: `${deps.authorizationServerUrl ?? ''}${CONTINUE_PATH}?${q.toString()}` };
};
