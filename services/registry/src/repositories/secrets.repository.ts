import type { Kysely } from 'kysely';
import type { Database, Db } from '@mcpx/db';
import { secretAad, type SecretBox } from '@mcpx/secrets';
import { bindToOrigin, unbind } from '../secret-origin.js';

/**
 * Account secrets, sealed with the key ring; plaintext exists only in memory, on the way out.
 * Each value is sealed together with the origin it was stored for (see ../secret-origin.ts) and
 * opens only for that origin.
 */
export class SecretsRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  /** Seals `value` for `origin` (the `scheme://host[:port]` of the server it is sent to). */
  async put(account: string, name: string, value: string, origin: string, trx: Kysely<Database> = this.db): Promise<void> {
    const sealed = this.box.seal(bindToOrigin(value, origin), secretAad(account, name));
    await trx
      .insertInto('registry.secrets')
      .values({ account_id: account, name, key_id: sealed.keyId, ciphertext: sealed.ciphertext })
      .onConflict((oc) =>
        oc.columns(['account_id', 'name']).doUpdateSet({ key_id: sealed.keyId, ciphertext: sealed.ciphertext, updated_at: new Date() }),
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

  /**
   * Opens the named secrets of an account that may be sent to `origin`: a missing one, one stored
   * for another origin, and one sealed before origins were recorded (see `bindUnboundSecrets`)
   * are absent from the map.
   */
  async open(account: string, names: string[], origin: string): Promise<Map<string, string>> {
    if (names.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('registry.secrets')
      .select(['name', 'key_id', 'ciphertext'])
      .where('account_id', '=', account)
      .where('name', 'in', names)
      .execute();
    const out = new Map<string, string>();
    for (const r of rows) {
      const opened = unbind(this.box.open({ keyId: r.key_id, ciphertext: r.ciphertext }, secretAad(account, r.name)));
      if (opened.origin !== undefined && opened.origin === origin) out.set(r.name, opened.value);
    }
    return out;
  }

  /** Deletes named secrets of an account (the header secrets a server owns). */
  async deleteNamed(account: string, names: string[], trx: Kysely<Database>): Promise<number> {
    if (names.length === 0) return 0;
    const res = await trx.deleteFrom('registry.secrets').where('account_id', '=', account).where('name', 'in', names).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
