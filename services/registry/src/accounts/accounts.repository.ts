import type { Kysely } from 'kysely';
import type { AccountCreation } from '@mcpx/config';
import type { Database, Db } from '@mcpx/db';

import type { SignerRole } from '../shared/action-handler.js';

export class AccountsRepository {
  /**
   * @param creation how accounts come to exist (`ACCOUNTS`): `open`, any key's first write creates
   * its account; `closed`, only {@link create} (the operator's command) does.
   */
  constructor(
    private readonly db: Db,
    readonly creation: AccountCreation = 'open',
  ) {}

  /**
   * Whether an envelope of `account` may be served at all: always when accounts are open (its
   * first write creates it), only an existing account when they are closed.
   */
  async admits(account: string): Promise<boolean> {
    return this.creation === 'open' || (await this.exists(account));
  }

  /** Creates the account of a principal (the operator's command); whether it is new. */
  async create(principal: string): Promise<boolean> {
    const res = await this.db
      .insertInto('registry.accounts')
      .values({ id: principal, principal })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  /** Every account, oldest first, with when it was created (the operator's listing). */
  async list(): Promise<Array<{ principal: string; createdAt: Date }>> {
    const rows = await this.db
      .selectFrom('registry.accounts')
      .select(['principal', 'created_at'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ principal: r.principal, createdAt: r.created_at }));
  }

  /**
   * Creates the account of a principal on its first action that writes; idempotent. With
   * accounts closed the account exists already (an envelope of any other is refused first).
   */
  async ensure(principal: string, trx: Kysely<Database> = this.db): Promise<void> {
    // No conflict target: `id` and `principal` are both unique, and two first actions of one key
    // on two instances at once race on both (with `ON CONFLICT (id)` the loser hit the principal's
    // index and the action failed as `internal`).
    await trx
      .insertInto('registry.accounts')
      .values({ id: principal, principal })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }

  async exists(account: string): Promise<boolean> {
    const row = await this.db.selectFrom('registry.accounts').select('id').where('id', '=', account).executeTakeFirst();
    return row !== undefined;
  }

  /** The role a signer holds in an account, or null when it holds none. */
  async signerRole(account: string, principal: string): Promise<SignerRole | null> {
    const row = await this.db
      .selectFrom('registry.signers')
      .select('role')
      .where('account_id', '=', account)
      .where('principal', '=', principal)
      .executeTakeFirst();
    return row?.role ?? null;
  }

  /**
   * Adds a signer or changes its role. `agents` binds an AGENT signer to the agents (ids) it may
   * act for; any other role is bound to none.
   */
  async authorizeSigner(
    account: string,
    principal: string,
    role: SignerRole,
    agents: readonly string[] | null = null,
    trx: Kysely<Database> = this.db,
  ): Promise<void> {
    const bound = role === 'AGENT' ? JSON.stringify(agents ?? []) : null;
    await trx
      .insertInto('registry.signers')
      .values({ account_id: account, principal, role, agents: bound })
      .onConflict((oc) => oc.columns(['account_id', 'principal']).doUpdateSet({ role, agents: bound }))
      .execute();
  }

  /** The agent ids an AGENT signer is bound to (none when it is not an AGENT signer of the account). */
  async boundAgents(account: string, principal: string): Promise<string[]> {
    const row = await this.db
      .selectFrom('registry.signers')
      .select('agents')
      .where('account_id', '=', account)
      .where('principal', '=', principal)
      .where('role', '=', 'AGENT')
      .executeTakeFirst();
    return Array.isArray(row?.agents) ? row.agents.filter((a): a is string => typeof a === 'string') : [];
  }

  /** Removes a signer; the next envelope it signs is refused. Whether there was one to remove. */
  async revokeSigner(account: string, principal: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('registry.signers')
      .where('account_id', '=', account)
      .where('principal', '=', principal)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
