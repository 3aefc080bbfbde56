import { createHash } from 'node:crypto';
import type { Db } from '@mcpx/db';
import type { OAuthClientInformationMixed, OAuthDiscoveryState, OAuthTokens } from '@mcpx/mcp-client';
import { openOAuthTokens, sealOAuthTokens } from '@mcpx/stored';
import { oauthSecretAad, type SecretBox } from '@mcpx/secrets';
import type { ClientCredentialsState } from './oauth-client-config.js';

/** What we keep about a server's OAuth client, sealed: every value exactly as received. */
export interface OAuthClientState {
  clientInformation?: OAuthClientInformationMixed;
  codeVerifier?: string;
  discoveryState?: OAuthDiscoveryState;
  /** The server URL the discovery state was found for (a moved server discovers again). */
  discoveredFor?: string;
  /** Present when the pre-registered client uses the client credentials grant: its key and scope. */
  clientCredentials?: ClientCredentialsState;
}

/** How long a pending authorization (its `state`) may be completed. */
export const PENDING_AUTHORIZATION_TTL_MS = 30 * 60_000;

/** The SHA-256 of a `state` value: what the callback looks up (the value itself is never stored). */
export function stateHash(state: string): string {
  return createHash('sha256').update(state, 'utf8').digest('hex');
}

/** The additional data a sealed OAuth value is bound to (a row copied elsewhere does not open). */
const aad = oauthSecretAad;

/** OAuth state per (account, server): client and pending authorization, tokens, all sealed. */
export class OAuthConnectionsRepository {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  /** `db`: a transaction to read in (SetMcpServer's write), else the pool. */
  async client(account: string, serverId: string, db: Db = this.db): Promise<OAuthClientState> {
    const row = await db
      .selectFrom('registry.oauth_connections')
      .select(['client_key_id', 'client_sealed'])
      .where('account_id', '=', account)
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    if (!row?.client_key_id || !row.client_sealed) return {};
    return JSON.parse(
      this.box.open({ keyId: row.client_key_id, ciphertext: row.client_sealed }, aad(account, serverId, 'client')),
    ) as OAuthClientState;
  }

  /** Merges `patch` into the client state (read, merge, seal, write), in `db` (a transaction) when given. */
  async updateClient(
    account: string,
    serverId: string,
    patch: Partial<OAuthClientState>,
    db: Db = this.db,
  ): Promise<void> {
    const next = { ...(await this.client(account, serverId, db)), ...patch };
    for (const key of Object.keys(patch) as Array<keyof OAuthClientState>)
      if (patch[key] === undefined) delete next[key];
    const sealed = this.box.seal(JSON.stringify(next), aad(account, serverId, 'client'));
    await db
      .insertInto('registry.oauth_connections')
      .values({
        server_id: serverId,
        account_id: account,
        client_key_id: sealed.keyId,
        client_sealed: sealed.ciphertext,
      })
      .onConflict((oc) =>
        oc
          .column('server_id')
          .doUpdateSet({ client_key_id: sealed.keyId, client_sealed: sealed.ciphertext, updated_at: new Date() }),
      )
      .execute();
  }

  /** Runs `fn` in one transaction: what it writes commits together or not at all. */
  inTransaction<T>(fn: (trx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  /** The tokens held for a server, only while it keeps the URL they were issued for. */
  async tokens(
    account: string,
    serverId: string,
    serverUrl: string,
  ): Promise<{ tokens: OAuthTokens; expiresAt: Date | null } | undefined> {
    const row = await this.db
      .selectFrom('registry.oauth_connections')
      .select(['tokens_key_id', 'tokens_sealed', 'tokens_expire_at', 'tokens_server_url'])
      .where('account_id', '=', account)
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    // The codec the proxy reads with (`@mcpx/stored`): tokens as received, bound to the URL they were issued for.
    const tokens: OAuthTokens | undefined = openOAuthTokens(this.box, account, serverId, row, serverUrl);
    return tokens === undefined ? undefined : { tokens, expiresAt: row?.tokens_expire_at ?? null };
  }

  /** Stores tokens exactly as received; `undefined` forgets them. In `db` (a transaction) when given. */
  async saveTokens(
    account: string,
    serverId: string,
    tokens: OAuthTokens | undefined,
    serverUrl: string | null,
    db: Db = this.db,
  ): Promise<void> {
    const sealed = tokens === undefined ? undefined : sealOAuthTokens(this.box, account, serverId, tokens);
    const expiresAt = tokens?.expires_in === undefined ? null : new Date(Date.now() + tokens.expires_in * 1000);
    const values = {
      tokens_key_id: sealed?.keyId ?? null,
      tokens_sealed: sealed?.ciphertext ?? null,
      tokens_expire_at: expiresAt,
      tokens_server_url: tokens === undefined ? null : serverUrl,
    };
    await db
      .insertInto('registry.oauth_connections')
      .values({ server_id: serverId, account_id: account, ...values })
      .onConflict((oc) => oc.column('server_id').doUpdateSet({ ...values, updated_at: new Date() }))
      .execute();
  }

  /**
   * Records the pending authorization's state (replacing any earlier one: only the newest URL
   * completes), in `db` (a transaction) when given.
   */
  async setPendingState(account: string, serverId: string, state: string, db: Db = this.db): Promise<void> {
    const values = {
      state_hash: stateHash(state),
      state_expires_at: new Date(Date.now() + PENDING_AUTHORIZATION_TTL_MS),
    };
    await db
      .insertInto('registry.oauth_connections')
      .values({ server_id: serverId, account_id: account, ...values })
      .onConflict((oc) => oc.column('server_id').doUpdateSet({ ...values, updated_at: new Date() }))
      .execute();
  }

  /** The server a live pending `state` belongs to, or undefined (unknown, forged or expired). */
  async findPending(state: string): Promise<{ accountId: string; serverId: string } | undefined> {
    const row = await this.db
      .selectFrom('registry.oauth_connections')
      .select(['account_id', 'server_id'])
      .where('state_hash', '=', stateHash(state))
      .where('state_expires_at', '>', new Date())
      .executeTakeFirst();
    return row === undefined ? undefined : { accountId: row.account_id, serverId: row.server_id };
  }

  /** The hash of the server's live pending `state`, or undefined (none, or expired). */
  async pendingStateHash(account: string, serverId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('registry.oauth_connections')
      .select(['state_hash'])
      .where('account_id', '=', account)
      .where('server_id', '=', serverId)
      .where('state_expires_at', '>', new Date())
      .executeTakeFirst();
    return row?.state_hash ?? undefined;
  }

  /** Consumes a pending state: true only for the one caller that removed it (a replay gets false). */
  async consumePending(serverId: string, state: string): Promise<boolean> {
    const res = await this.db
      .updateTable('registry.oauth_connections')
      .set({ state_hash: null, state_expires_at: null, updated_at: new Date() })
      .where('server_id', '=', serverId)
      .where('state_hash', '=', stateHash(state))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }
}
