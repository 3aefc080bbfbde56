import type { Db } from '@mcpx/db';
import { builtinEndpoint, findBuiltin } from '@mcpx/domain';
import { vendorTokensAad, type SecretBox } from '@mcpx/secrets';
import type { ServerEntry } from './catalog.js';

/**
 * A built-in server's entry (seed 001): its endpoint (the operator's override, else the
 * descriptor's) and the access token of the account's connection to its vendor. Null when `name`
 * is no built-in or the account has no connection to the vendor (the built-in is dark).
 */
export async function loadBuiltinEntry(db: Db, box: SecretBox, endpoints: Readonly<Record<string, string>>, account: string, name: string): Promise<ServerEntry | null> {
  const builtin = findBuiltin(name);
  if (builtin === undefined) return null;
  const row = await db
    .selectFrom('registry.vendor_connections')
    .select(['tokens_key_id', 'tokens_sealed'])
    .where('account_id', '=', account)
    .where('vendor', '=', builtin.vendor)
    .executeTakeFirst();
  if (row === undefined) return null;
  const tokens = JSON.parse(box.open({ keyId: row.tokens_key_id, ciphertext: row.tokens_sealed }, vendorTokensAad(account, builtin.vendor))) as { accessToken?: unknown };
  const headers: Record<string, string> = typeof tokens.accessToken === 'string' ? { authorization: `Bearer ${tokens.accessToken}` } : {};
  return { url: builtinEndpoint(builtin, endpoints), headers };
}
