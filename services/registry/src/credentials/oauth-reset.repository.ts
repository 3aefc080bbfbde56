import type { Kysely } from 'kysely';
import type { Database } from '@mcpx/db';

/**
 * Forgets everything OAuth holds for a server (its client — a pre-registered secret or key
 * included —, a pending authorization, its tokens) inside the caller's transaction: SetMcpServer
 * moving a server to another origin, whose authorization server must never see them. True when
 * there was a client or tokens to forget.
 */
export async function forgetOAuthState(trx: Kysely<Database>, account: string, serverId: string): Promise<boolean> {
  const rows = await trx
    .deleteFrom('registry.oauth_connections')
    .where('account_id', '=', account)
    .where('server_id', '=', serverId)
    .returning(['client_sealed', 'tokens_sealed'])
    .execute();
  return rows.some((r) => r.client_sealed !== null || r.tokens_sealed !== null);
}
