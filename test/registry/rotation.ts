import { sql } from 'kysely';
import type { Db } from '@mcpx/db';
import { runCommand, type CliResult } from '../support/cli.js';

/** Two keys of a ring, `old` then `new` (32 bytes each, base64). */
export const OLD_KEY = `old:${Buffer.alloc(32, 31).toString('base64')}`;
export const NEW_KEY = `new:${Buffer.alloc(32, 47).toString('base64')}`;

/** `npm run rotate-secrets`, as the operator runs it (README, Operations). */
export function rotateSecrets(databaseUrl: string, keyring: string): Promise<CliResult> {
  return runCommand('npm', ['run', '--silent', 'rotate-secrets'], {
    DATABASE_URL: databaseUrl,
    SECRETS_KEYRING: keyring,
    OUTBOUND_PROFILE: 'production',
  });
}

/** The report the command prints last. */
export function rotationReport(res: CliResult): unknown {
  return JSON.parse(res.stdout.trim().split('\n').at(-1) ?? '');
}

/** A report's per-table counts: `[rotated, left]` of secrets, oauth connections, vendor connections. */
export function tables(
  secrets: [number, number],
  oauth: [number, number],
  vendor: [number, number],
): Record<string, { rotated: number; left: number }> {
  const count = ([rotated, left]: [number, number]) => ({ rotated, left });
  return {
    'registry.secrets': count(secrets),
    'registry.oauth_connections': count(oauth),
    'registry.vendor_connections': count(vendor),
  };
}

/**
 * The key ids held by every `*key_id` column of the registry schema (`table.column` → distinct
 * ids): found from the catalog, not from the rotation's own list, so a sealed column the rotation
 * forgot shows up here.
 */
export async function keyIdsInUse(db: Db): Promise<Record<string, string[]>> {
  const columns = await sql<{ t: string; c: string }>`
    SELECT table_name AS t, column_name AS c FROM information_schema.columns
    WHERE table_schema = 'registry' AND column_name LIKE '%key\\_id' ORDER BY 1, 2`.execute(db);
  const out: Record<string, string[]> = {};
  for (const { t, c } of columns.rows) {
    const ids = await sql<{
      k: string;
    }>`SELECT DISTINCT ${sql.ref(c)} AS k FROM ${sql.table(`registry.${t}`)} WHERE ${sql.ref(c)} IS NOT NULL ORDER BY 1`.execute(
      db,
    );
    out[`${t}.${c}`] = ids.rows.map((r) => r.k);
  }
  return out;
}

/** Every sealed column holding values, all under `keyId`. */
export function allUnder(keyId: string): Record<string, string[]> {
  return {
    'oauth_connections.client_key_id': [keyId],
    'oauth_connections.tokens_key_id': [keyId],
    'secrets.key_id': [keyId],
    'vendor_connections.tokens_key_id': [keyId],
  };
}
