import { randomBytes } from 'node:crypto';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  OAuthTokens,
} from '@mcpx/mcp-client';
import type { OAuthConnectionsRepository } from './oauth-connections.repository.js';

export interface RegistryOAuthProviderOptions {
  account: string;
  serverId: string;
  /** The server's URL: tokens are bound to it. */
  serverUrl: string;
  redirectUrl: string;
  /** A fresh authorization ignores stored tokens (so `auth()` does not refresh instead). */
  ignoreTokens?: boolean;
  /** The `state` to use: the callback passes the one it received, a new flow gets a random one. */
  state?: string;
}

/**
 * The SDK's OAuth client provider for one (account, server), backed by the sealed store. The
 * authorization URL is captured (the registry hands it to the owner), never followed here.
 */
export class RegistryOAuthProvider implements OAuthClientProvider {
  /** Set when `auth()` decided the owner must authorize. */
  authorizationUrl: URL | undefined;
  private readonly stateValue: string;

  constructor(
    private readonly store: OAuthConnectionsRepository,
    private readonly opts: RegistryOAuthProviderOptions,
  ) {
    this.stateValue = opts.state ?? randomBytes(32).toString('base64url');
  }

  get redirectUrl(): string {
    return this.opts.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'mcp-connector',
      redirect_uris: [this.opts.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    };
  }

  async state(): Promise<string> {
    await this.store.setPendingState(this.opts.account, this.opts.serverId, this.stateValue);
    return this.stateValue;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    return (await this.store.client(this.opts.account, this.opts.serverId)).clientInformation;
  }

  async saveClientInformation(clientInformation: OAuthClientInformationMixed): Promise<void> {
    await this.store.updateClient(this.opts.account, this.opts.serverId, { clientInformation });
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.opts.ignoreTokens) return undefined;
    return (await this.store.tokens(this.opts.account, this.opts.serverId, this.opts.serverUrl))?.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.store.saveTokens(this.opts.account, this.opts.serverId, tokens, this.opts.serverUrl);
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.authorizationUrl = authorizationUrl;
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    await this.store.updateClient(this.opts.account, this.opts.serverId, { codeVerifier });
  }

  async codeVerifier(): Promise<string> {
    const verifier = (await this.store.client(this.opts.account, this.opts.serverId)).codeVerifier;
    if (verifier === undefined) throw new Error('no pending authorization for this server');
    return verifier;
  }

  async saveDiscoveryState(discoveryState: OAuthDiscoveryState): Promise<void> {
    await this.store.updateClient(this.opts.account, this.opts.serverId, { discoveryState, discoveredFor: this.opts.serverUrl });
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    const stored = await this.store.client(this.opts.account, this.opts.serverId);
    return stored.discoveredFor === this.opts.serverUrl ? stored.discoveryState : undefined;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const { account, serverId } = this.opts;
    if (scope === 'all' || scope === 'tokens') await this.store.saveTokens(account, serverId, undefined, null);
    if (scope === 'all' || scope === 'client') await this.store.updateClient(account, serverId, { clientInformation: undefined });
    if (scope === 'all' || scope === 'verifier') await this.store.updateClient(account, serverId, { codeVerifier: undefined });
    if (scope === 'all' || scope === 'discovery') await this.store.updateClient(account, serverId, { discoveryState: undefined });
  }
}
