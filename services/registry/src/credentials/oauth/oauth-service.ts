import { ErrorCodes, WireError } from '@mcpx/contracts';
import { LockBusyError, type SingleFlight } from '@mcpx/shared-state';
import type { Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { boundedOAuthFetch, runOAuth } from '@mcpx/mcp-client';
import type { Meter, Tracer } from '@mcpx/telemetry';
import type { McpServerRecord, McpServersRepository } from '../../catalog/mcp-servers.repository.js';
import { ClientCredentialsTokens, usesClientCredentials } from './client-credentials-tokens.js';
import { preRegisteredState, type PreRegisteredClient } from './oauth-client-config.js';
import type { OAuthConnectionsRepository } from './oauth-connections.repository.js';
import { RegistryOAuthProvider } from './oauth-provider.js';
import { expiring, type ServerCredentials } from '@mcpx/stored';
import { compareAndRefresh } from '../compare-and-refresh.js';
import { issuerMatches } from './authorization-response.js';
import type { OAuthTickets } from './browser-binding.js';
import { mixUpError } from './mix-up-errors.js';
import { OAuthExchanges } from './oauth-exchanges.js';

/** Longest an OAuth exchange (discovery, registration, token) may hold the per-server lock. */
const OAUTH_LOCK_TTL_MS = 30_000;

/** The per-server lock every exchange of a server's tokens takes (ensure, refresh, code exchange, client credentials). */
function oauthLockKey(server: McpServerRecord): string {
  return `oauth:${server.accountId}:${server.id}`;
}

export type OAuthOutcome = { state: 'authorized' } | { state: 'redirect'; authorizationUrl: string };

export interface EnsureOptions {
  /** Start a new authorization even where stored tokens could be refreshed; `resourceMetadataUrl`: the one a 401 named. */
  fresh?: boolean;
  resourceMetadataUrl?: URL;
  /**
   * Called with the URL of an authorization this call starts, in the transaction that writes it
   * (its `state`, code verifier and discovery): what it writes there (an audit entry) commits with
   * the authorization or not at all; when it throws, the authorization pending before stays.
   */
  started?: (authorizationUrl: string, trx: Db) => Promise<void>;
}

type StoredTokens = Awaited<ReturnType<OAuthConnectionsRepository['tokens']>>;

export interface OAuthServiceDeps {
  store: OAuthConnectionsRepository;
  servers: McpServersRepository;
  singleFlight: SingleFlight;
  log: Logger;
  /** The fetch that reaches remote servers and authorization servers (outbound safety). */
  fetch?: typeof fetch;
  /** The registry's callback URL, `<public url>/v1/oauth/callback` (known once it listens). */
  redirectUrl: () => string;
  /**
   * The registry's client ID metadata document URL, offered as the client id where an
   * authorization server supports those (undefined: dynamic registration only; see
   * `clientMetadataDocumentUrl` for when the registry has one).
   */
  clientMetadataUrl?: () => string | undefined;
  /**
   * The tickets that bind an authorization to the browser of the signer who asked for it: the
   * authorization server's URL is never handed out, only a ticket URL that leads to it.
   */
  tickets: OAuthTickets;
  /** Spans (`registry.oauth <op>`) and the `mcpx_oauth_exchanges_total` counter, when given. */
  tracer?: Tracer;
  meter?: Meter;
}

/**
 * OAuth 2.1 for remote servers whose config says `auth: 'oauth'`. Every exchange with the
 * authorization server runs under a per-server lock across instances (Redis), so a rotating
 * refresh token is presented once, whoever needs a fresh token at the same moment.
 */
export class OAuthService {
  /** Every OAuth exchange reads at most 64 KiB per document (remote metadata is untrusted). */
  private readonly oauthFetch: typeof fetch;
  /** Servers whose pre-registered client uses the client credentials grant (machine to machine). */
  private readonly clientCredentials: ClientCredentialsTokens;
  private readonly exchanges: OAuthExchanges;

  constructor(private readonly deps: OAuthServiceDeps) {
    this.oauthFetch = boundedOAuthFetch(deps.fetch);
    this.exchanges = new OAuthExchanges(deps.tracer, deps.meter);
    this.clientCredentials = new ClientCredentialsTokens({
      store: deps.store,
      log: deps.log,
      oauthFetch: this.oauthFetch,
      lock: (server, lead, follow) =>
        deps.singleFlight.run(oauthLockKey(server), { ttlMs: OAUTH_LOCK_TTL_MS }, lead, follow),
    });
  }

  /**
   * Makes sure the server can be called: refreshes stored tokens when there are any, else (or when
   * refresh fails, or `fresh` asks for it) starts an authorization and returns its URL (stored
   * with what `started` writes, or not at all: see {@link EnsureOptions.started}).
   */
  ensure(server: McpServerRecord, opts: EnsureOptions = {}): Promise<OAuthOutcome> {
    return this.exchanges.observed('ensure', server, () => this.ensureUnobserved(server, opts));
  }

  private async ensureUnobserved(server: McpServerRecord, opts: EnsureOptions): Promise<OAuthOutcome> {
    // Nobody authorizes a client credentials client: a stored token, else a new one, or an error.
    if (usesClientCredentials(server)) return this.clientCredentials.refreshStale(server, undefined);
    const lead = async (): Promise<OAuthOutcome> => {
      // Discovered afresh each time: a server that moved to another authorization server gets a
      // client registered there, and nothing of the old one (client, tokens) is presented to it.
      const started = opts.started;
      const provider = this.provider(server, {
        ignoreTokens: opts.fresh === true,
        rediscover: true,
        ...(started !== undefined ? { deferStart: true } : {}),
      });
      const result = await runOAuth(provider, {
        serverUrl: server.config.url,
        ...(opts.resourceMetadataUrl ? { resourceMetadataUrl: opts.resourceMetadataUrl } : {}),
        fetchFn: this.oauthFetch,
      });
      const authorizationUrl = result === 'AUTHORIZED' ? undefined : provider.authorizationUrl?.toString();
      if (result !== 'AUTHORIZED' && authorizationUrl === undefined)
        throw new Error('authorization started without a URL');
      if (started !== undefined && authorizationUrl !== undefined)
        await this.deps.store.inTransaction(async (trx) => {
          await provider.commitStart(trx);
          await started(authorizationUrl, trx);
        });
      else await provider.persistDiscovery();
      this.reportRegistration(server, provider);
      if (authorizationUrl === undefined) return { state: 'authorized' };
      return { state: 'redirect', authorizationUrl };
    };
    // A follower found another instance exchanging: tokens it stored are ours too; without any,
    // it starts its own authorization (no refresh token is involved in that).
    const follow = async (): Promise<OAuthOutcome> => {
      if ((await this.deps.store.tokens(server.accountId, server.id, server.config.url)) !== undefined)
        return { state: 'authorized' };
      return lead();
    };
    // A fresh authorization presents no refresh token: it needs no lock (and must not join a refresh).
    if (opts.fresh) return lead();
    return this.deps.singleFlight.run(oauthLockKey(server), { ttlMs: OAUTH_LOCK_TTL_MS }, lead, follow);
  }

  /**
   * What a signer (an OWNER or WRITER) gets for an authorization to open: a single-use,
   * short-lived ticket URL of the registry that binds the authorization to the browser opening it
   * and leads it to `authorizationUrl`.
   */
  ticketUrl(server: McpServerRecord, authorizationUrl: string): Promise<string> {
    return this.deps.tickets.issue({ account: server.accountId, serverId: server.id }, authorizationUrl);
  }

  /**
   * Compare-and-refresh under the per-server lock (the key {@link ensure} uses): the stored token
   * is refreshed only while it is still the one whose hash the caller holds (`staleTokenHash`;
   * absent: whatever is stored). A caller that lost the race finds a different token stored and
   * gets `authorized` without presenting the (already rotated) refresh token again. A refused
   * refresh forgets the tokens and starts a new authorization (`redirect`); no stored token at all
   * is `no_tokens` (the caller decides whether a new URL is worth replacing a pending one).
   */
  refreshStale(
    server: McpServerRecord,
    staleTokenHash: string | undefined,
  ): Promise<OAuthOutcome | { state: 'no_tokens' }> {
    return this.exchanges.observed('refresh', server, () => this.refreshStaleUnobserved(server, staleTokenHash));
  }

  private async refreshStaleUnobserved(
    server: McpServerRecord,
    staleTokenHash: string | undefined,
  ): Promise<OAuthOutcome | { state: 'no_tokens' }> {
    if (usesClientCredentials(server)) return this.clientCredentials.refreshStale(server, staleTokenHash);
    // A refused refresh starts a new authorization: its URL, for the `redirect` answer.
    let authorizationUrl: string | undefined;
    const outcome = await compareAndRefresh<NonNullable<StoredTokens>>({
      lock: (lead, follow) =>
        this.deps.singleFlight.run(oauthLockKey(server), { ttlMs: OAUTH_LOCK_TTL_MS }, lead, follow),
      read: () => this.deps.store.tokens(server.accountId, server.id, server.config.url),
      accessToken: (s) => s.tokens.access_token,
      staleTokenHash,
      anyTokenWillDo: false,
      followerTakesAny: false,
      // No token stored: nothing to refresh (the caller decides whether a new URL is worth replacing a pending one).
      whenNone: 'gone',
      refresh: async (stored) => {
        if (stored?.tokens.refresh_token === undefined) {
          await this.deps.store.saveTokens(server.accountId, server.id, undefined, null);
          const fresh = await this.ensure(server, { fresh: true });
          if (fresh.state === 'authorized') return 'refreshed';
          authorizationUrl = fresh.authorizationUrl;
          return 'refused';
        }
        const provider = this.provider(server, {});
        const result = await runOAuth(provider, { serverUrl: server.config.url, fetchFn: this.oauthFetch });
        await provider.persistDiscovery();
        this.reportRegistration(server, provider);
        if (result === 'AUTHORIZED') return 'refreshed';
        // The refresh was refused: the stored tokens are dead, and must never be presented again.
        await this.deps.store.saveTokens(server.accountId, server.id, undefined, null);
        if (provider.authorizationUrl === undefined) throw new Error('authorization started without a URL');
        authorizationUrl = provider.authorizationUrl.toString();
        return 'refused';
      },
      // The holder refused left no tokens (`gone`: authorize again, no refresh token involved).
      retry: () => new Error('another instance could not refresh the token; try again'),
    });
    if (outcome === 'gone') return { state: 'no_tokens' };
    if (outcome === 'refused' && authorizationUrl !== undefined) return { state: 'redirect', authorizationUrl };
    return { state: 'authorized' };
  }

  /**
   * Before a discovery: whether `held` (the server's credentials as `@mcpx/stored` reads
   * them) needed its token renewed first, and was. A token about to expire is refreshed; a failed
   * refresh leaves the old one, whose 401 then says `auth_required`. A client credentials token is
   * replaced (see {@link ClientCredentialsTokens.freshen}).
   */
  async freshen(server: McpServerRecord, held: ServerCredentials): Promise<boolean> {
    if (server.config.auth !== 'oauth') return false;
    if (usesClientCredentials(server)) return this.clientCredentials.freshen(server, held);
    const hash = held.oauth?.tokenHash;
    if (hash === undefined || held.oauth?.refreshable !== true || !expiring(held)) return false;
    try {
      await this.refreshStale(server, hash);
      return true;
    } catch (err) {
      this.deps.log.warn('oauth refresh failed', { account: server.accountId, server: server.name, err: err as Error });
      return false;
    }
  }

  /**
   * After a discovery's 401 on a client credentials server: headers with a new token to try once
   * more (null for any other server). See {@link ClientCredentialsTokens.renew}.
   */
  renew(
    server: McpServerRecord,
    used: Record<string, string>,
    challenge: URL | undefined,
  ): Promise<Record<string, string> | null> {
    return this.clientCredentials.renew(server, used, challenge);
  }

  /**
   * Uses a client the owner registered with the authorization server instead of registering one.
   * Stored sealed, like a registered client (with the key and scope of a client credentials one);
   * different credentials forget the tokens and any pending authorization of the previous ones.
   * The same credentials given again for a server that moved are bound afresh to whichever
   * authorization server it names now (the SDK never presents them to another than the first).
   * Written in `trx`, SetMcpServer's write: the server and its client are saved together or not at all.
   */
  async preRegister(server: McpServerRecord, client: PreRegisteredClient, trx: Db): Promise<void> {
    const state = await this.deps.store.client(server.accountId, server.id, trx);
    const stored = state.clientInformation;
    const next = preRegisteredState(client);
    const same =
      stored?.client_id === next.clientInformation.client_id &&
      stored.client_secret === next.clientInformation.client_secret &&
      JSON.stringify(state.clientCredentials) === JSON.stringify(next.clientCredentials);
    const moved = state.discoveredFor !== undefined && state.discoveredFor !== server.config.url;
    if (same && !moved) return;
    await this.deps.store.updateClient(server.accountId, server.id, { ...next, codeVerifier: undefined }, trx);
    if (stored !== undefined && !same)
      await this.deps.store.saveTokens(server.accountId, server.id, undefined, null, trx);
  }

  /**
   * Completes an authorization from the callback: the `state` must be a live pending one (it is
   * consumed, so a replay fails), the response's `iss` must name the authorization server the
   * authorization was started at (RFC 9207, checked by the SDK before the code is redeemed), then
   * the code is exchanged with the stored PKCE verifier. Unknown, forged, expired or replayed
   * state, or a response from another issuer: `invalid_input` naming the field, no code
   * exchanged, nothing stored.
   */
  async complete(resp: { code: string; state: string; iss?: string | undefined }): Promise<McpServerRecord> {
    const { code, state, iss } = resp;
    const server = await this.consumePending(state);
    // The exchange waits for a refresh in flight (same per-server lock) and never interleaves with
    // one: a refresh that finished before it cannot write over the tokens it brings.
    const provider = this.provider(server, { state });
    try {
      await this.deps.singleFlight.exclusive(oauthLockKey(server), { ttlMs: OAUTH_LOCK_TTL_MS }, async () => {
        await this.exchanges.observed('code_exchange', server, async () => {
          await runOAuth(provider, {
            serverUrl: server.config.url,
            authorizationCode: code,
            ...(iss !== undefined ? { iss } : {}),
            fetchFn: this.oauthFetch,
          });
          return { state: 'authorized' as const };
        });
        await provider.persistDiscovery();
        await this.deps.store.updateClient(server.accountId, server.id, { codeVerifier: undefined });
      });
    } catch (err) {
      if (err instanceof LockBusyError)
        throw new WireError(
          ErrorCodes.transportError,
          `the ${server.name} tokens are being refreshed; authorize again in a moment`,
        );
      const mixUp = mixUpError(err);
      if (mixUp !== undefined) {
        this.deps.log.warn(
          'oauth callback refused: the response is not from the authorization server the authorization was started at',
          {
            account: server.accountId,
            server: server.name,
            check: mixUp,
          },
        );
        throw new WireError(
          ErrorCodes.invalidInput,
          'iss: this authorization response does not come from the authorization server it was started at; start the authorization again',
          { field: 'iss' },
        );
      }
      throw err;
    }
    return server;
  }

  /**
   * Ends an authorization the authorization server answered with an error: the pending state is
   * consumed (it cannot complete later), and the answer is whether the response's `iss` names
   * the authorization server it was started at. Only then may its `error` be shown: in a mix-up
   * the error values are the attacker's (RFC 9207 §2.4).
   */
  async refuse(resp: {
    state: string;
    iss?: string | undefined;
  }): Promise<{ server: McpServerRecord; issuerOk: boolean }> {
    const server = await this.consumePending(resp.state);
    const { issuerOk } = await this.exchanges.observed('error_response', server, async () => {
      const { discoveryState, discoveredFor } = await this.deps.store.client(server.accountId, server.id);
      const metadata = discoveredFor === server.config.url ? discoveryState?.authorizationServerMetadata : undefined;
      const ok = issuerMatches(
        { iss: resp.iss },
        metadata?.issuer,
        metadata?.authorization_response_iss_parameter_supported === true,
      );
      await this.deps.store.updateClient(server.accountId, server.id, { codeVerifier: undefined });
      return { state: ok ? 'refused' : 'issuer_mismatch', issuerOk: ok };
    });
    return { server, issuerOk };
  }

  /** The server of a live pending `state`, which is consumed (one caller only): else `invalid_input` on `state`. */
  private async consumePending(state: string): Promise<McpServerRecord> {
    const pending = await this.deps.store.findPending(state);
    if (pending === undefined)
      throw new WireError(ErrorCodes.invalidInput, 'state: unknown or expired authorization; start it again', {
        field: 'state',
      });
    const server = await this.deps.servers.findById(pending.accountId, pending.serverId);
    if (server === null)
      throw new WireError(ErrorCodes.invalidInput, 'state: the server of this authorization is gone', {
        field: 'state',
      });
    if (!(await this.deps.store.consumePending(server.id, state))) {
      throw new WireError(ErrorCodes.invalidInput, 'state: this authorization was already completed', {
        field: 'state',
      });
    }
    return server;
  }

  private provider(
    server: McpServerRecord,
    opts: { ignoreTokens?: boolean; state?: string; rediscover?: boolean },
  ): RegistryOAuthProvider {
    const clientMetadataUrl = this.deps.clientMetadataUrl?.();
    return new RegistryOAuthProvider(this.deps.store, {
      account: server.accountId,
      serverId: server.id,
      serverUrl: server.config.url,
      redirectUrl: this.deps.redirectUrl(),
      ...(clientMetadataUrl !== undefined ? { clientMetadataUrl } : {}),
      ...opts,
    });
  }

  /**
   * Says how a new client came about: its metadata document URL, or a registration, and why a
   * registration where the authorization server would have taken the document (the registry has
   * no https public URL, or the operator turned documents off).
   */
  private reportRegistration(server: McpServerRecord, provider: RegistryOAuthProvider): void {
    const registration = provider.clientRegistration;
    if (registration === undefined) return;
    const fields = { account: server.accountId, server: server.name, method: registration.method };
    if (registration.method === 'dynamic' && registration.metadataDocumentSupported) {
      this.deps.log.info(
        'oauth client registered dynamically although the authorization server accepts client ID metadata documents: the registry offers none (its public URL is not https, or documents are turned off)',
        fields,
      );
    } else {
      this.deps.log.info('oauth client ready', fields);
    }
  }
}
