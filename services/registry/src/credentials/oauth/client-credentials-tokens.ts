import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { CredentialError } from '../../shared/credential-error.js';
import type { McpServerRecord } from '../../catalog/mcp-servers.repository.js';
import { expiring, type ServerCredentials } from '@mcpx/stored';
import { accessTokenHash } from './access-tokens.js';
import { compareAndRefresh } from '../compare-and-refresh.js';
import {
  ClientCredentialsError,
  requestClientCredentialsToken,
  type ClientCredentialsTarget,
} from './client-credentials-provider.js';
import { OAuthGrants } from './oauth-client-config.js';
import type { OAuthConnectionsRepository } from './oauth-connections.repository.js';

export interface ClientCredentialsTokensDeps {
  store: OAuthConnectionsRepository;
  log: Logger;
  /** The bounded, outbound-safe fetch of every OAuth exchange. */
  oauthFetch: typeof fetch;
  /** Runs `lead` under the server's OAuth lock (the one refreshes take), else `follow` once it is free. */
  lock<T>(server: McpServerRecord, lead: () => Promise<T>, follow: () => Promise<T>): Promise<T>;
}

/** Whether an oauth server's pre-registered client uses the client credentials grant (nobody signs in). */
export function usesClientCredentials(server: McpServerRecord): boolean {
  return server.config.auth === 'oauth' && server.config.oauthClient?.grant === OAuthGrants.clientCredentials;
}

/** The wire error of a proxy's refresh when the authorization server refused the client credentials. */
export function isClientCredentialsRefusal(err: unknown): boolean {
  return (
    err instanceof WireError &&
    err.code === ErrorCodes.authRequired &&
    err.details.grant === OAuthGrants.clientCredentials
  );
}

/**
 * Access tokens of client credentials servers. There is no refresh token to rotate: a token that
 * expires, or that the server refuses (401), is replaced by a new one from the token endpoint,
 * under the per-server lock and only while the stored token is still the one the caller saw
 * (compare-and-replace), so racing callers (registries, proxies through the registry) cause one
 * token request.
 */
export class ClientCredentialsTokens {
  constructor(private readonly deps: ClientCredentialsTokensDeps) {}

  /**
   * Makes sure a token other than the one hashed `staleTokenHash` is stored (absent: any token),
   * asking the token endpoint when there is none. Throws {@link ClientCredentialsError}.
   */
  async obtain(server: McpServerRecord, staleTokenHash: string | undefined, resourceMetadataUrl?: URL): Promise<void> {
    // There is no refresh token: with none stored a token is got, and any token will do for a
    // caller that held none. A follower whose holder got none fails (it said why to its own caller).
    await compareAndRefresh({
      lock: (lead, follow) => this.deps.lock(server, lead, follow),
      read: () => this.deps.store.tokens(server.accountId, server.id, server.config.url),
      accessToken: (s) => s.tokens.access_token,
      staleTokenHash,
      anyTokenWillDo: true,
      followerTakesAny: true,
      whenNone: 'obtain',
      refresh: async () => {
        const target: ClientCredentialsTarget = {
          account: server.accountId,
          serverId: server.id,
          serverUrl: server.config.url,
        };
        await requestClientCredentialsToken(this.deps.store, target, {
          fetchFn: this.deps.oauthFetch,
          ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}),
        });
        this.deps.log.info('oauth client credentials token issued', { account: server.accountId, server: server.name });
        return 'refreshed';
      },
      retry: () => new ClientCredentialsError('another instance could not get an access token; try again', false),
    });
  }

  /**
   * Before a discovery: whether `held` (read by `@mcpx/stored`) needed its token replaced
   * first, and was. Without a stored token there is none: the server's 401 names its metadata, and
   * {@link renew} gets a token from there. Refused credentials are the server's error (a
   * {@link CredentialError}: the owner must fix `config.oauth`, signing in would not help), an
   * authorization server that fails leaves a token that is still valid in use.
   */
  async freshen(server: McpServerRecord, held: ServerCredentials): Promise<boolean> {
    const hash = held.oauth?.tokenHash;
    if (hash === undefined || !expiring(held)) return false;
    try {
      await this.obtain(server, hash);
      return true;
    } catch (err) {
      if (!(err instanceof ClientCredentialsError)) throw err;
      if (err.refused || (held.oauth?.expiresAt ?? Infinity) <= Date.now()) throw new CredentialError(err.message);
      this.deps.log.warn('oauth client credentials token not replaced: the current one is used until it expires', {
        account: server.accountId,
        server: server.name,
        err,
      });
      return false;
    }
  }

  /**
   * After a discovery's 401: `used` with a new token in its `Authorization` header, to try once
   * more, or null for a server that does not use the grant. `challenge` is the 401's
   * `resource_metadata` URL. A failure is a {@link CredentialError} (the server's `error`).
   */
  async renew(
    server: McpServerRecord,
    used: Record<string, string>,
    challenge: URL | undefined,
  ): Promise<Record<string, string> | null> {
    if (!usesClientCredentials(server)) return null;
    const sent = /^Bearer (.+)$/i.exec(used.authorization ?? '')?.[1];
    try {
      await this.obtain(server, sent !== undefined ? accessTokenHash(sent) : undefined, challenge);
    } catch (err) {
      if (err instanceof ClientCredentialsError) throw new CredentialError(err.message);
      throw err;
    }
    const stored = await this.deps.store.tokens(server.accountId, server.id, server.config.url);
    if (stored === undefined) throw new CredentialError('the new access token was not kept; try again');
    return { ...used, authorization: `Bearer ${stored.tokens.access_token}` };
  }

  /**
   * A proxy's refresh: a new token unless the one it held (`staleTokenHash`) was replaced
   * already. Refused credentials are `auth_required` for the call with `grant:
   * 'client_credentials'` (its owner must fix `config.oauth`); anything else is retryable.
   */
  async refreshStale(server: McpServerRecord, staleTokenHash: string | undefined): Promise<{ state: 'authorized' }> {
    try {
      await this.obtain(server, staleTokenHash);
      return { state: 'authorized' };
    } catch (err) {
      if (!(err instanceof ClientCredentialsError)) throw err;
      if (err.refused) {
        throw new WireError(
          ErrorCodes.authRequired,
          `the ${server.name} MCP server's OAuth client credentials do not work (${err.message}); its owner must set config.oauth again, signing in does not help`,
          {
            server: server.name,
            grant: OAuthGrants.clientCredentials,
          },
        );
      }
      throw new WireError(
        ErrorCodes.transportError,
        `the ${server.name} MCP server's OAuth token could not be replaced: ${err.message}`,
        { server: server.name },
      );
    }
  }
}
