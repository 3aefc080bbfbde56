import { sql } from 'kysely';
import type { Db } from '@mcpx/db';
import { oauthSecretAad, secretAad, vendorTokensAad, type SecretBox } from '@mcpx/secrets';

/** The tables holding values sealed with the key ring (`@mcpx/secrets`); the rotation reports each. */
export const SealedTables = {
  secrets: 'registry.secrets',
  oauthConnections: 'registry.oauth_connections',
  vendorConnections: 'registry.vendor_connections',
} as const;
export type SealedTable = (typeof SealedTables)[keyof typeof SealedTables];

/**
 * One column sealed with the key ring. A row is named by its account and `nameColumn` (unique
 * together in each table, and the order the batches walk); `aad` is what its value is bound to.
 */
interface SealedColumn {
  table: SealedTable;
  nameColumn: string;
  keyIdColumn: string;
  sealedColumn: string;
  aad(account: string, name: string): string;
}

/**
 * Every column sealed with the key ring. A new sealed column belongs here, or rotation leaves it
 * under the old key (the rotation test checks that no `*key_id` column of the registry keeps one).
 */
const SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    table: SealedTables.secrets,
    nameColumn: 'name',
    keyIdColumn: 'key_id',
    sealedColumn: 'ciphertext',
    aad: secretAad,
  },
  {
    table: SealedTables.oauthConnections,
    nameColumn: 'server_id',
    keyIdColumn: 'client_key_id',
    sealedColumn: 'client_sealed',
    aad: (account, serverId) => oauthSecretAad(account, serverId, 'client'),
  },
  {
    table: SealedTables.oauthConnections,
    nameColumn: 'server_id',
    keyIdColumn: 'tokens_key_id',
    sealedColumn: 'tokens_sealed',
    aad: (account, serverId) => oauthSecretAad(account, serverId, 'tokens'),
  },
  {
    table: SealedTables.vendorConnections,
    nameColumn: 'vendor',
    keyIdColumn: 'tokens_key_id',
    sealedColumn: 'tokens_sealed',
    aad: vendorTokensAad,
  },
];

export interface RotationCount {
  /** Values this run re-sealed under the newest key. */
  rotated: number;
  /** Values still sealed with another key once the run is done (changed meanwhile by a writer on an older ring). */
  left: number;
}

export interface RotationReport extends RotationCount {
  /** The newest key of the ring: what every value is sealed with once `left` is 0. */
  keyId: string;
  tables: Record<SealedTable, RotationCount>;
}

interface SealedRow {
  account_id: string;
  name: string;
  key_id: string;
  sealed: Uint8Array;
}

/**
 * Re-seals every value an older key of the ring sealed, in every sealed column, under the newest
 * key, `batch` rows at a time. Safe while the services run: each value is replaced only if its key
 * id and sealed bytes are still those read (compare and set), so a value written meanwhile is
 * never overwritten with the stale plaintext; it is skipped, and counted in `left` if an older key
 * sealed it. Idempotent. `updated_at` is left alone: the plaintext does not change.
 *
 * Throws when a value does not open (its key left the ring, or it was tampered with), naming the
 * table, the row and the key id, never the value.
 */
export async function rotateSealedValues(
  db: Db,
  box: SecretBox,
  opts: { batch?: number } = {},
): Promise<RotationReport> {
  const batch = opts.batch ?? 500;
  const tables = Object.fromEntries(Object.values(SealedTables).map((t) => [t, { rotated: 0, left: 0 }])) as Record<
    SealedTable,
    RotationCount
  >;
  for (const column of SEALED_COLUMNS) tables[column.table].rotated += await rotateColumn(db, box, column, batch);
  // Counted after every pass: a writer still on an older ring may have sealed with the old key meanwhile.
  for (const column of SEALED_COLUMNS) tables[column.table].left += await countOlder(db, box.currentKeyId, column);
  const all = Object.values(tables);
  return {
    rotated: all.reduce((n, t) => n + t.rotated, 0),
    keyId: box.currentKeyId,
    left: all.reduce((n, t) => n + t.left, 0),
    tables,
  };
}

async function rotateColumn(db: Db, box: SecretBox, c: SealedColumn, batch: number): Promise<number> {
  const name = sql.ref(c.nameColumn);
  const keyId = sql.ref(c.keyIdColumn);
  const sealedCol = sql.ref(c.sealedColumn);
  let rotated = 0;
  // Keyset batches over (account, name): a row skipped as changed is not read again in this run.
  let after: SealedRow | undefined;
  for (;;) {
    const page = await sql<SealedRow>`
      SELECT account_id, ${name} AS name, ${keyId} AS key_id, ${sealedCol} AS sealed
      FROM ${sql.table(c.table)}
      WHERE ${keyId} <> ${box.currentKeyId} AND ${sealedCol} IS NOT NULL
        ${after === undefined ? sql`` : sql`AND (account_id, ${name}) > (${after.account_id}, ${after.name})`}
      ORDER BY account_id, ${name}
      LIMIT ${batch}`.execute(db);
    for (const row of page.rows) {
      const aad = c.aad(row.account_id, row.name);
      const next = box.seal(openRow(box, c, row, aad), aad);
      const res = await sql`
        UPDATE ${sql.table(c.table)} SET ${keyId} = ${next.keyId}, ${sealedCol} = ${next.ciphertext}
        WHERE account_id = ${row.account_id} AND ${name} = ${row.name} AND ${keyId} = ${row.key_id} AND ${sealedCol} = ${row.sealed}`.execute(
        db,
      );
      if (Number(res.numAffectedRows ?? 0) === 1) rotated++;
    }
    after = page.rows.at(-1);
    if (after === undefined || page.rows.length < batch) return rotated;
  }
}

function openRow(box: SecretBox, c: SealedColumn, row: SealedRow, aad: string): string {
  try {
    return box.open({ keyId: row.key_id, ciphertext: row.sealed }, aad);
  } catch (err) {
    // SecretBox's messages name the key id only.
    throw new Error(
      `${c.table}.${c.sealedColumn} of account ${row.account_id}, ${c.nameColumn} ${row.name}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

async function countOlder(db: Db, currentKeyId: string, c: SealedColumn): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM ${sql.table(c.table)}
    WHERE ${sql.ref(c.keyIdColumn)} <> ${currentKeyId} AND ${sql.ref(c.sealedColumn)} IS NOT NULL`.execute(db);
  return r.rows[0]?.n ?? 0;
}
