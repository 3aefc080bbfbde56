import {
  createPrivateKeyJwtAuth,
  describeOAuthError,
  redactSecrets,
  runOAuth,
  type AddClientAuthentication,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
} from '@mcpx/mcp-client';
import { OAUTH_CLIENT_NAME } from './client-metadata-document.js';
import type { ClientCredentialsState } from './oauth-client-config.js';
import type { OAuthClientState } from './oauth-connections.repository.js';
import type { OAuthStateStore } from './oauth-provider.js';
import { mixUpError } from './mix-up-errors.js';

/** Where a server's OAuth state lives: the tokens are bound to its URL. */
export interface ClientCredentialsTarget {
  account: string;
  serverId: string;
  serverUrl: string;
}

/**
 * A client credentials token could not be had. `message` is for the owner and carries no secret;
 * `refused` when the authorization server (or its metadata) turned the credentials down, which
 * only a new `config.oauth` fixes, rather than failing in a way worth trying again.
 */
export class ClientCredentialsError extends Error {
  override readonly name = 'ClientCredentialsError';
  constructor(
    message: string,
    readonly refused: boolean,
  ) {
    super(message);
  }
}

/** OAuth error codes that say the authorization server failed, not that it refused us. */
const TRANSIENT_OAUTH_ERRORS = new Set(['server_error', 'temporarily_unavailable', 'too_many_requests']);

/**
 * The SDK's OAuth client provider for the client credentials grant (SEP-1046), over the sealed
 * store: a non-interactive flow (no redirect URL), so `auth()` asks the token endpoint directly.
 * With a secret, the SDK authenticates the client as the authorization server advertises
 * (`client_secret_basic`, else `client_secret_post`); with a key, every request carries a fresh
 * RFC 7523 assertion (`private_key_jwt`). The client is pre-registered: nothing here registers
 * one, and a refused client is never forgotten (only the owner replaces it).
 */
export class ClientCredentialsOAuthProvider implements OAuthClientProvider {
  readonly addClientAuthentication?: AddClientAuthentication;
  private client: OAuthClientInformationMixed;
  private pendingDiscovery: OAuthDiscoveryState | undefined;

  private constructor(
    private readonly store: OAuthStateStore,
    private readonly target: ClientCredentialsTarget,
    private readonly sealed: OAuthClientState & {
      clientInformation: OAuthClientInformationMixed;
      clientCredentials: ClientCredentialsState;
    },
  ) {
    this.client = sealed.clientInformation;
    const { privateKey, keyAlg } = sealed.clientCredentials;
    if (privateKey !== undefined && keyAlg !== undefined)
      this.addClientAuthentication = assertionAuth(sealed.clientInformation.client_id, privateKey, keyAlg);
  }

  /** The provider of a server whose sealed state holds a client credentials client. */
  static async load(store: OAuthStateStore, target: ClientCredentialsTarget): Promise<ClientCredentialsOAuthProvider> {
    const state = await store.client(target.account, target.serverId);
    const { clientInformation, clientCredentials } = state;
    if (clientInformation === undefined || clientCredentials === undefined) {
      throw new ClientCredentialsError('the OAuth client credentials are not stored; set config.oauth again', true);
    }
    return new ClientCredentialsOAuthProvider(store, target, { ...state, clientInformation, clientCredentials });
  }

  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { privateKey, scope } = this.sealed.clientCredentials;
    return {
      client_name: OAUTH_CLIENT_NAME,
      redirect_uris: [],
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: privateKey !== undefined ? 'private_key_jwt' : 'client_secret_basic',
      ...(scope !== undefined ? { scope } : {}),
    };
  }

  /** The values no message may carry: the secret, the key, and the secret as HTTP Basic sends it. */
  get secrets(): string[] {
    const { client_id: id, client_secret: secret } = this.client;
    const key = this.sealed.clientCredentials.privateKey;
    return [
      ...(secret ? [secret, Buffer.from(`${id}:${secret}`).toString('base64')] : []),
      ...(key ? [key.trim()] : []),
    ];
  }

  /**
   * The stored client, bound to the first authorization server it is used with (SEP-2352): the
   * SDK passes the issuer it resolved, and an unbound client is stamped with it and stored so.
   * There is deliberately no `saveClientInformation`: a client bound to another issuer is then
   * refused by the SDK (`AuthorizationServerMismatchError`) instead of being replaced by a
   * dynamic registration, which a pre-registered machine client must never get.
   */
  async clientInformation(ctx?: { issuer: string }): Promise<OAuthClientInformationMixed> {
    if (this.client.issuer === undefined && ctx?.issuer !== undefined) {
      this.client = { ...this.client, issuer: ctx.issuer };
      await this.store.updateClient(this.target.account, this.target.serverId, { clientInformation: this.client });
    }
    return this.client;
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    return (await this.store.tokens(this.target.account, this.target.serverId, this.target.serverUrl))?.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.store.saveTokens(this.target.account, this.target.serverId, tokens, this.target.serverUrl);
  }

  prepareTokenRequest(scope?: string): URLSearchParams {
    const params = new URLSearchParams({ grant_type: 'client_credentials' });
    if (scope) params.set('scope', scope);
    return params;
  }

  redirectToAuthorization(): void {
    throw new ClientCredentialsError('the client credentials grant has no authorization to redirect to', false);
  }

  saveCodeVerifier(): void {}

  codeVerifier(): string {
    throw new ClientCredentialsError('the client credentials grant has no code verifier', false);
  }

  /** Kept in memory until the flow succeeds (as the authorization code provider does). */
  saveDiscoveryState(discoveryState: OAuthDiscoveryState): void {
    this.pendingDiscovery = discoveryState;
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    if (this.pendingDiscovery !== undefined) return this.pendingDiscovery;
    return this.sealed.discoveredFor === this.target.serverUrl ? this.sealed.discoveryState : undefined;
  }

  async persistDiscovery(): Promise<void> {
    if (this.pendingDiscovery === undefined) return;
    await this.store.updateClient(this.target.account, this.target.serverId, {
      discoveryState: this.pendingDiscovery,
      discoveredFor: this.target.serverUrl,
    });
    this.pendingDiscovery = undefined;
  }

  /**
   * The SDK calls this on `invalid_client` (scope `all`) before trying once more: the tokens and
   * the discovery go, the pre-registered client stays (nothing could register it again).
   */
  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const { account, serverId } = this.target;
    if (scope === 'all' || scope === 'tokens') await this.store.saveTokens(account, serverId, undefined, null);
    if (scope === 'all' || scope === 'discovery') {
      this.pendingDiscovery = undefined;
      this.sealed.discoveryState = undefined;
      await this.store.updateClient(account, serverId, { discoveryState: undefined, discoveredFor: undefined });
    }
  }
}

/**
 * `private_key_jwt` through the SDK's signer, refused up front with a clear reason where the
 * authorization server advertises that it takes neither the method nor the algorithm.
 */
function assertionAuth(clientId: string, privateKey: string, alg: string): AddClientAuthentication {
  const sign = createPrivateKeyJwtAuth({ issuer: clientId, subject: clientId, privateKey, alg });
  return async (headers, params, url, metadata) => {
    const methods = metadata?.token_endpoint_auth_methods_supported;
    if (methods !== undefined && !methods.includes('private_key_jwt')) {
      throw new ClientCredentialsError(
        `the authorization server does not take private_key_jwt client authentication (it takes ${methods.join(', ') || 'none'})`,
        true,
      );
    }
    const algs = metadata?.token_endpoint_auth_signing_alg_values_supported;
    if (algs !== undefined && !algs.includes(alg)) {
      throw new ClientCredentialsError(
        `the authorization server does not take ${alg} client assertions (it takes ${algs.join(', ') || 'none'})`,
        true,
      );
    }
    await sign(headers, params, url, metadata);
  };
}

/**
 * Asks the token endpoint for a new access token with the server's client credentials (RFC 9728
 * and RFC 8414 discovery first, unless stored; `resourceMetadataUrl` from a 401's challenge) and
 * stores it sealed. Every failure is a {@link ClientCredentialsError} with no secret in it.
 */
export async function requestClientCredentialsToken(
  store: OAuthStateStore,
  target: ClientCredentialsTarget,
  opts: { fetchFn: typeof fetch; resourceMetadataUrl?: URL },
): Promise<void> {
  const provider = await ClientCredentialsOAuthProvider.load(store, target);
  try {
    const result = await runOAuth(provider, {
      serverUrl: target.serverUrl,
      fetchFn: opts.fetchFn,
      ...(opts.resourceMetadataUrl ? { resourceMetadataUrl: opts.resourceMetadataUrl } : {}),
    });
    if (result !== 'AUTHORIZED') throw new ClientCredentialsError(`the token request ended ${result}`, false);
  } catch (err) {
    throw clientCredentialsError(err, provider.secrets);
  }
  await provider.persistDiscovery();
}

/** An owner-facing error for whatever the flow threw, with every secret value cut out. */
function clientCredentialsError(err: unknown, secrets: string[]): ClientCredentialsError {
  // Every form of each (bare, base64, URL-encoded, any case): the one rule of `@mcpx/mcp-client`.
  const scrub = (message: string): string => redactSecrets(message, secrets).slice(0, 300);
  if (err instanceof ClientCredentialsError) return new ClientCredentialsError(scrub(err.message), err.refused);
  // The SDK's OAuthError: the authorization server's own error code.
  const code = err instanceof Error && err.name === 'OAuthError' ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string') {
    const why = `${code}${message && message !== code ? `: ${message}` : ''}`;
    if (TRANSIENT_OAUTH_ERRORS.has(code))
      return new ClientCredentialsError(scrub(`the authorization server failed to issue a token (${why})`), false);
    return new ClientCredentialsError(
      scrub(`the authorization server refused the OAuth client credentials (${why})`),
      true,
    );
  }
  // The SDK will not present credentials stamped for one authorization server to another.
  if (mixUpError(err) === 'authorization_server') {
    return new ClientCredentialsError(
      'the server now names another authorization server than the one its client credentials were used with; set config.oauth again to use them there',
      true,
    );
  }
  return new ClientCredentialsError(scrub(`could not get an access token: ${describeOAuthError(err)}`), false);
}
