import type { Kysely } from 'kysely';
import type { Database, Db } from '@mcpx/db';

export type SignerRole = 'OWNER' | 'AGENT' | 'WRITER';

export class AccountsRepository {
  constructor(private readonly db: Db) {}

  /** Creates the account of a principal on its first action that writes; idempotent. */
  async ensure(principal: string, trx: Kysely<Database> = this.db): Promise<void> {
    await trx
      .insertInto('registry.accounts')
      .values({ id: principal, principal })
      .onConflict((oc) => oc.column('id').doNothing())
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

  async authorizeSigner(account: string, principal: string, role: SignerRole, trx: Kysely<Database> = this.db): Promise<void> {
    await trx
      .insertInto('registry.signers')
      .values({ account_id: account, principal, role })
      .onConflict((oc) => oc.columns(['account_id', 'principal']).doUpdateSet({ role }))
      .execute();
  }
}
