import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { SingleFlight } from '@mcpx/locks';
import type { Logger } from '@mcpx/log';
import { runOAuth } from '@mcpx/mcp-client';
import type { McpServerRecord, McpServersRepository } from '../repositories/mcp-servers.repository.js';
import type { OAuthConnectionsRepository } from './oauth-connections.repository.js';
import { RegistryOAuthProvider } from './oauth-provider.js';

/** Refresh an access token this long before it expires. */
export const REFRESH_BEFORE_EXPIRY_MS = 60_000;
/** Longest an OAuth exchange (discovery, registration, token) may hold the per-server lock. */
const OAUTH_LOCK_TTL_MS = 30_000;

export type OAuthOutcome = { state: 'authorized' } | { state: 'redirect'; authorizationUrl: string };

export interface OAuthServiceDeps {
  store: OAuthConnectionsRepository;
  servers: McpServersRepository;
  singleFlight: SingleFlight;
  log: Logger;
  /** The fetch that reaches remote servers and authorization servers (outbound safety). */
  fetch?: typeof fetch;
  /** The registry's callback URL, `<public url>/v1/oauth/callback` (known once it listens). */
  redirectUrl: () => string;
}

/**
 * OAuth 2.1 for remote servers whose config says `auth: 'oauth'`. Every exchange with the
 * authorization server runs under a per-server lock across instances (Redis), so a rotating
 * refresh token is presented once, whoever needs a fresh token at the same moment.
 */
export class OAuthService {
  constructor(private readonly deps: OAuthServiceDeps) {}

  /**
   * Makes sure the server can be called: refreshes stored tokens when there are any, else (or when
   * refresh fails, or `fresh` asks for it) starts an authorization and returns its URL.
   */
  async ensure(server: McpServerRecord, opts: { fresh?: boolean; resourceMetadataUrl?: URL } = {}): Promise<OAuthOutcome> {
    const key = `oauth:${server.accountId}:${server.id}`;
    const lead = async (): Promise<OAuthOutcome> => {
      const provider = this.provider(server, { ignoreTokens: opts.fresh === true });
      const result = await runOAuth(provider, {
        serverUrl: server.config.url,
        ...(opts.resourceMetadataUrl ? { resourceMetadataUrl: opts.resourceMetadataUrl } : {}),
        ...(this.deps.fetch ? { fetchFn: this.deps.fetch } : {}),
      });
      if (result === 'AUTHORIZED') return { state: 'authorized' };
      if (provider.authorizationUrl === undefined) throw new Error('authorization started without a URL');
      return { state: 'redirect', authorizationUrl: provider.authorizationUrl.toString() };
    };
    // A follower found another instance exchanging: tokens it stored are ours too; without any,
    // it starts its own authorization (no refresh token is involved in that).
    const follow = async (): Promise<OAuthOutcome> => {
      if ((await this.deps.store.tokens(server.accountId, server.id, server.config.url)) !== undefined) return { state: 'authorized' };
      return lead();
    };
    // A fresh authorization presents no refresh token: it needs no lock (and must not join a refresh).
    if (opts.fresh) return lead();
    return this.deps.singleFlight.run(key, { ttlMs: OAUTH_LOCK_TTL_MS }, lead, follow);
  }

  /**
   * The `Authorization` header for an oauth server (empty when it has no token yet). A token about
   * to expire is refreshed first; a failed refresh leaves the old one, whose 401 then says
   * `auth_required`.
   */
  async headers(server: McpServerRecord): Promise<Record<string, string>> {
    if (server.config.auth !== 'oauth') return {};
    let stored = await this.deps.store.tokens(server.accountId, server.id, server.config.url);
    if (stored === undefined) return {};
    const expiring = stored.expiresAt !== null && stored.expiresAt.getTime() - Date.now() < REFRESH_BEFORE_EXPIRY_MS;
    if (expiring && stored.tokens.refresh_token !== undefined) {
      try {
        await this.ensure(server);
        stored = (await this.deps.store.tokens(server.accountId, server.id, server.config.url)) ?? stored;
      } catch (err) {
        this.deps.log.warn('oauth refresh failed', { account: server.accountId, server: server.name, err: err as Error });
      }
    }
    return { authorization: `Bearer ${stored.tokens.access_token}` };
  }

  /**
   * Completes an authorization from the callback: the `state` must be a live pending one (it is
   * consumed, so a replay fails), then the code is exchanged with the stored PKCE verifier.
   * Unknown, forged, expired or replayed state: `invalid_input`, nothing stored.
   */
  async complete(code: string, state: string): Promise<McpServerRecord> {
    const pending = await this.deps.store.findPending(state);
    if (pending === undefined) throw new WireError(ErrorCodes.invalidInput, 'state: unknown or expired authorization; start it again', { field: 'state' });
    const server = await this.deps.servers.findById(pending.accountId, pending.serverId);
    if (server === null) throw new WireError(ErrorCodes.invalidInput, 'state: the server of this authorization is gone', { field: 'state' });
    if (!(await this.deps.store.consumePending(server.id, state))) {
      throw new WireError(ErrorCodes.invalidInput, 'state: this authorization was already completed', { field: 'state' });
    }
    // A code exchange presents no refresh token, so it needs no lock.
    const provider = this.provider(server, { state });
    await runOAuth(provider, { serverUrl: server.config.url, authorizationCode: code, ...(this.deps.fetch ? { fetchFn: this.deps.fetch } : {}) });
    await this.deps.store.updateClient(server.accountId, server.id, { codeVerifier: undefined });
    return server;
  }

  private provider(server: McpServerRecord, opts: { ignoreTokens?: boolean; state?: string }): RegistryOAuthProvider {
    return new RegistryOAuthProvider(this.deps.store, {
      account: server.accountId,
      serverId: server.id,
      serverUrl: server.config.url,
      redirectUrl: this.deps.redirectUrl(),
      ...opts,
    });
  }
}
