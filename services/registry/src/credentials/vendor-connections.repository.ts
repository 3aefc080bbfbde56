import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, Db } from '@mcpx/db';
import { openVendorTokens, sealVendorTokens, type VendorTokens } from '@mcpx/stored';
import type { SecretBox } from '@mcpx/secrets';

/** The tokens of a vendor connection, as SetVendorConnection takes them (sealed in the one stored casing, `@mcpx/stored`). */
export type { VendorTokens };

export interface VendorConnection {
  /** Changes when the vendor is connected anew (after a disconnect): a new incarnation of its built-ins. */
  id: string;
  vendor: string;
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** An account's vendor connections; tokens sealed with the key ring, plaintext only on the way out. */
export class VendorConnectionsRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  async put(
    account: string,
    vendor: string,
    tokens: VendorTokens,
    trx: Kysely<Database> = this.db,
  ): Promise<VendorConnection> {
    const sealed = sealVendorTokens(this.box, account, vendor, tokens);
    const expiresAt = tokens.expiresAt !== undefined ? new Date(tokens.expiresAt) : null;
    const row = await trx
      .insertInto('registry.vendor_connections')
      .values({
        id: randomUUID(),
        account_id: account,
        vendor,
        tokens_key_id: sealed.keyId,
        tokens_sealed: sealed.ciphertext,
        expires_at: expiresAt,
      })
      .onConflict((oc) =>
        oc.columns(['account_id', 'vendor']).doUpdateSet({
          tokens_key_id: sealed.keyId,
          tokens_sealed: sealed.ciphertext,
          expires_at: expiresAt,
          updated_at: new Date(),
        }),
      )
      .returning(['id', 'vendor', 'expires_at', 'created_at', 'updated_at'])
      .executeTakeFirstOrThrow();
    return toConnection(row);
  }

  async delete(account: string, vendor: string, trx: Kysely<Database> = this.db): Promise<VendorConnection | null> {
    const row = await trx
      .deleteFrom('registry.vendor_connections')
      .where('account_id', '=', account)
      .where('vendor', '=', vendor)
      .returning(['id', 'vendor', 'expires_at', 'created_at', 'updated_at'])
      .executeTakeFirst();
    return row ? toConnection(row) : null;
  }

  async list(account: string, trx: Kysely<Database> = this.db): Promise<VendorConnection[]> {
    const rows = await trx
      .selectFrom('registry.vendor_connections')
      .select(['id', 'vendor', 'expires_at', 'created_at', 'updated_at'])
      .where('account_id', '=', account)
      .orderBy('vendor')
      .execute();
    return rows.map(toConnection);
  }

  /** The connection to `vendor`, locked until the caller's transaction ends (serialises changes of its built-ins). */
  async lock(account: string, vendor: string, trx: Kysely<Database>): Promise<VendorConnection | null> {
    const row = await trx
      .selectFrom('registry.vendor_connections')
      .select(['id', 'vendor', 'expires_at', 'created_at', 'updated_at'])
      .where('account_id', '=', account)
      .where('vendor', '=', vendor)
      .forUpdate()
      .executeTakeFirst();
    return row ? toConnection(row) : null;
  }

  /** The vendor's tokens, opened, with the connection they belong to; null when there is no connection. */
  tokens(account: string, vendor: string): Promise<{ connectionId: string; tokens: VendorTokens } | null> {
    return this.openTokens(this.db, account, vendor, false);
  }

  /**
   * Replaces the tokens read as `read` after a refresh; false when they changed meanwhile (the
   * vendor disconnected, connected anew, or the owner gave new tokens: theirs win) — compare and
   * set on the tokens themselves, under the row's lock: not on their sealed bytes, which a key
   * rotation re-seals (the refresh's new tokens would be lost, and a rotated refresh token with them).
   */
  async replaceTokens(
    account: string,
    vendor: string,
    read: { connectionId: string; tokens: VendorTokens },
    tokens: VendorTokens,
  ): Promise<boolean> {
    const sealed = sealVendorTokens(this.box, account, vendor, tokens);
    return this.db.transaction().execute(async (trx) => {
      const stored = await this.openTokens(trx, account, vendor, true);
      if (stored?.connectionId !== read.connectionId) return false;
      if (JSON.stringify(stored.tokens) !== JSON.stringify(read.tokens)) return false;
      await trx
        .updateTable('registry.vendor_connections')
        .set({
          tokens_key_id: sealed.keyId,
          tokens_sealed: sealed.ciphertext,
          expires_at: tokens.expiresAt !== undefined ? new Date(tokens.expiresAt) : null,
          updated_at: new Date(),
        })
        .where('account_id', '=', account)
        .where('vendor', '=', vendor)
        .execute();
      return true;
    });
  }

  /** Reads and opens the vendor's tokens (`forUpdate`: row-locked until `trx` ends); null when there is no connection. */
  private async openTokens(
    trx: Kysely<Database>,
    account: string,
    vendor: string,
    forUpdate: boolean,
  ): Promise<{ connectionId: string; tokens: VendorTokens } | null> {
    const row = await trx
      .selectFrom('registry.vendor_connections')
      .select(['id', 'tokens_key_id', 'tokens_sealed'])
      .where('account_id', '=', account)
      .where('vendor', '=', vendor)
      .$if(forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (row === undefined) return null;
    return { connectionId: row.id, tokens: openVendorTokens(this.box, account, vendor, row) };
  }
}

function toConnection(row: {
  id: string;
  vendor: string;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}): VendorConnection {
  return {
    id: row.id,
    vendor: row.vendor,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
