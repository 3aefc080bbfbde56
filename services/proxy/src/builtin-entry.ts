import { accessTokenHash } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import { builtinEndpoint, findBuiltin } from '@mcpx/domain';
import { vendorTokensAad, type SecretBox } from '@mcpx/secrets';
import type { ServerEntry } from './server-entry.js';

/**
 * A built-in server's entry (docs/servers.md#built-in-servers): its endpoint (the operator's override, else the
 * descriptor's) and the access token of the account's connection to its vendor. Null when `name`
 * is no built-in or the account has no connection to the vendor (the built-in is dark).
 *
 * The token is refreshable like an oauth server's (`oauth`: its hash, and its expiry when there is
 * a refresh token to renew it with): before expiry and on a 401 the call path asks the registry,
 * which refreshes the vendor connection.
 */
export async function loadBuiltinEntry(db: Db, box: SecretBox, endpoints: Readonly<Record<string, string>>, account: string, name: string): Promise<ServerEntry | null> {
  const builtin = findBuiltin(name);
  if (builtin === undefined) return null;
  const row = await db
    .selectFrom('registry.vendor_connections')
    .select(['tokens_key_id', 'tokens_sealed', 'expires_at'])
    .where('account_id', '=', account)
    .where('vendor', '=', builtin.vendor)
    .executeTakeFirst();
  if (row === undefined) return null;
  const tokens = JSON.parse(box.open({ keyId: row.tokens_key_id, ciphertext: row.tokens_sealed }, vendorTokensAad(account, builtin.vendor))) as { accessToken?: unknown; refreshToken?: unknown };
  const url = builtinEndpoint(builtin, endpoints);
  if (typeof tokens.accessToken !== 'string') return { url, headers: {} };
  return {
    url,
    headers: { authorization: `Bearer ${tokens.accessToken}` },
    oauth: { tokenHash: accessTokenHash(tokens.accessToken), ...(row.expires_at && tokens.refreshToken !== undefined ? { expiresAt: row.expires_at.getTime() } : {}) },
  };
}
