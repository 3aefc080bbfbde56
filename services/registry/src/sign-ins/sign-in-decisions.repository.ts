import { sql } from 'kysely';
import { MAX_PENDING_SIGN_INS, randomSignInSecret, signInSecretHash } from '@mcpx/contracts';
import type { Database, Db } from '@mcpx/db';

type SignInRow = Omit<Database['registry.oauth_sign_ins'], 'created_at'> & { created_at: Date };

/**
 * The owner's side of `registry.oauth_sign_ins`: the pending sign-ins of an account and the
 * decision on one. Every other step (the request, the continue, the tokens) is the authorization
 * server's (`@mcpx/authorization-server`, its own process and database role), over the same rows.
 */
export class SignInDecisionsRepository {
  constructor(private readonly db: Db) {}

  /** The account's sign-ins waiting for a decision, oldest first, with their agent's name. */
  async listPending(account: string): Promise<Array<SignInRow & { agent_name: string }>> {
    return this.db
      .selectFrom('registry.oauth_sign_ins as s')
      .innerJoin('registry.agents as a', (j) =>
        j.onRef('a.id', '=', 's.agent_id').onRef('a.account_id', '=', 's.account_id'),
      )
      .selectAll('s')
      .select('a.name as agent_name')
      .where('s.account_id', '=', account)
      .where('s.status', '=', 'pending')
      .where('s.expires_at', '>', sql<Date>`now()`)
      .orderBy('s.created_at')
      .orderBy('s.id')
      .limit(MAX_PENDING_SIGN_INS)
      .execute();
  }

  /**
   * The owner's decision on a pending sign-in of the account: the continue nonce (to be carried
   * by the approver's own browser to the continue step), or why not. `recorded` is called with
   * the decision in its transaction: what it writes there (the audit entry) commits with the
   * decision or not at all.
   */
  async decide(
    account: string,
    id: string,
    approve: boolean,
    signer: string,
    recorded: (decided: { agent: string; clientId: string }, trx: Db) => Promise<void>,
  ): Promise<{ nonce: string; agent: string; clientId: string } | 'not_found' | 'decided'> {
    const nonce = randomSignInSecret();
    const row = await this.db.transaction().execute(async (trx) => {
      const decided = await this.decideIn(trx, account, id, approve, signer, nonce);
      if (decided !== undefined) await recorded({ agent: decided.agent_id, clientId: decided.client_id }, trx);
      return decided;
    });
    if (row !== undefined) return { nonce, agent: row.agent_id, clientId: row.client_id };
    const exists = await this.db
      .selectFrom('registry.oauth_sign_ins')
      .select(['status', 'expires_at'])
      .where('account_id', '=', account)
      .where('id', '=', id)
      .executeTakeFirst();
    if (exists === undefined || exists.expires_at.getTime() <= Date.now()) return 'not_found';
    return 'decided';
  }

  /** The conditional update of a pending, unexpired sign-in to its decision, in `db`. */
  private decideIn(
    db: Db,
    account: string,
    id: string,
    approve: boolean,
    signer: string,
    nonce: string,
  ): Promise<{ agent_id: string; client_id: string } | undefined> {
    return db
      .updateTable('registry.oauth_sign_ins')
      .set({
        status: approve ? 'approved' : 'denied',
        continue_hash: signInSecretHash(nonce),
        decided_at: sql<Date>`now()`,
        decided_by: signer,
      })
      .where('account_id', '=', account)
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '>', sql<Date>`now()`)
      .returning(['agent_id', 'client_id'])
      .executeTakeFirst();
  }
}
