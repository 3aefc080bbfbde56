import type { Kysely } from 'kysely';
import type { Database, Db } from '@mcpx/db';
import { secretAad, type SecretBox } from '@mcpx/secrets';
import { bindToOrigin } from './secret-origin.js';

/**
 * Account secrets, sealed with the key ring; plaintext exists only in memory, on the way out.
 * Each value is sealed together with the origin it was stored for (see ./secret-origin.ts) and
 * opens only for that origin: what a discovery or a call sends is read by `CredentialReader`
 * (`@mcpx/stored`), never from here.
 */
export class SecretsRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  /** Seals `value` for `origin` (the `scheme://host[:port]` of the server it is sent to). */
  async put(
    account: string,
    name: string,
    value: string,
    origin: string,
    trx: Kysely<Database> = this.db,
  ): Promise<void> {
    const sealed = this.box.seal(bindToOrigin(value, origin), secretAad(account, name));
    await trx
      .insertInto('registry.secrets')
      .values({ account_id: account, name, key_id: sealed.keyId, ciphertext: sealed.ciphertext })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'name'])
          .doUpdateSet({ key_id: sealed.keyId, ciphertext: sealed.ciphertext, updated_at: new Date() }),
      )
      .execute();
  }

  async existingNames(account: string, names: string[], trx: Kysely<Database> = this.db): Promise<Set<string>> {
    if (names.length === 0) return new Set();
    const rows = await trx
      .selectFrom('registry.secrets')
      .select('name')
      .where('account_id', '=', account)
      .where('name', 'in', names)
      .execute();
    return new Set(rows.map((r) => r.name));
  }

  /** Deletes named secrets of an account (the header secrets a server owns). */
  async deleteNamed(account: string, names: string[], trx: Kysely<Database>): Promise<number> {
    if (names.length === 0) return 0;
    const res = await trx
      .deleteFrom('registry.secrets')
      .where('account_id', '=', account)
      .where('name', 'in', names)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
