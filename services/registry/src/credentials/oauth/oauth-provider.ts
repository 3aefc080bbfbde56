import { randomBytes } from 'node:crypto';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  OAuthTokens,
} from '@mcpx/mcp-client';
import type { Db } from '@mcpx/db';
import { OAUTH_CLIENT_NAME, isClientMetadataUrl } from './client-metadata-document.js';
import type { OAuthClientState, OAuthConnectionsRepository } from './oauth-connections.repository.js';

/** What the provider needs of the sealed store (an in-memory one serves the conformance harness). */
export type OAuthStateStore = Pick<
  OAuthConnectionsRepository,
  'client' | 'updateClient' | 'tokens' | 'saveTokens' | 'setPendingState'
>;

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
  /**
   * An https URL serving this client's metadata document: used as the client id where the
   * authorization server advertises `client_id_metadata_document_supported` (else registration).
   */
  clientMetadataUrl?: string;
  /**
   * Discover the authorization server afresh instead of reading the recorded discovery: for a flow
   * that may start a new authorization, as the server may have moved to another authorization
   * server (SEP-2352: credentials of the old one are then not used, a client is registered with
   * the new one). The callback leg never sets it: it must redeem the code where it was issued.
   */
  rediscover?: boolean;
  /**
   * Keep the authorization this flow starts (its `state` and code verifier, with its discovery)
   * until {@link RegistryOAuthProvider.commitStart} writes it, in the caller's transaction: an
   * authorization that is not committed leaves the one pending before it as it was.
   */
  deferStart?: boolean;
}

/** How a flow came by a client it did not have: its metadata document URL, or a registration. */
export interface ClientRegistration {
  method: 'metadata_document' | 'dynamic';
  /** Whether the authorization server advertised `client_id_metadata_document_supported`. */
  metadataDocumentSupported: boolean;
}

/**
 * The SDK's OAuth client provider for one (account, server), backed by the sealed store. The
 * authorization URL is captured (the registry hands it to the owner), never followed here.
 */
export class RegistryOAuthProvider implements OAuthClientProvider {
  /** Set when `auth()` decided the owner must authorize. */
  authorizationUrl: URL | undefined;
  /** Set when this flow saved a new client (not when a stored one was only bound to its issuer). */
  clientRegistration: ClientRegistration | undefined;
  private readonly stateValue: string;
  /** Discovery found during this flow, stored only once the flow succeeds ({@link persistDiscovery}). */
  private pendingDiscovery: OAuthDiscoveryState | undefined;
  /** With `deferStart`: the authorization this flow started, not yet written ({@link commitStart}). */
  private readonly started: { state: boolean; codeVerifier?: string } = { state: false };

  constructor(
    private readonly store: OAuthStateStore,
    private readonly opts: RegistryOAuthProviderOptions,
  ) {
    this.stateValue = opts.state ?? randomBytes(32).toString('base64url');
  }

  get redirectUrl(): string {
    return this.opts.redirectUrl;
  }

  /** Only an https URL with a path: the SDK fails the whole flow on any other, even without CIMD. */
  get clientMetadataUrl(): string | undefined {
    const url = this.opts.clientMetadataUrl;
    return url !== undefined && isClientMetadataUrl(url) ? url : undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: OAUTH_CLIENT_NAME,
      redirect_uris: [this.opts.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
      // SEP-837: the registry is a confidential client running on a web server (its secret never
      // leaves it), whatever host its callback is on: not the 'native' the SDK would guess from a
      // loopback redirect (that type is for apps on the owner's own device).
      application_type: 'web',
    };
  }

  async state(): Promise<string> {
    if (this.opts.deferStart) this.started.state = true;
    else await this.store.setPendingState(this.opts.account, this.opts.serverId, this.stateValue);
    return this.stateValue;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    return (await this.store.client(this.opts.account, this.opts.serverId)).clientInformation;
  }

  async saveClientInformation(clientInformation: OAuthClientInformationMixed): Promise<void> {
    if ((await this.clientInformation())?.client_id !== clientInformation.client_id) {
      const metadata = (await this.discoveryState())?.authorizationServerMetadata;
      this.clientRegistration = {
        method: clientInformation.client_id === this.clientMetadataUrl ? 'metadata_document' : 'dynamic',
        metadataDocumentSupported: metadata?.client_id_metadata_document_supported === true,
      };
    }
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
    if (this.opts.deferStart) this.started.codeVerifier = codeVerifier;
    else await this.store.updateClient(this.opts.account, this.opts.serverId, { codeVerifier });
  }

  async codeVerifier(): Promise<string> {
    const verifier = (await this.store.client(this.opts.account, this.opts.serverId)).codeVerifier;
    if (verifier === undefined) throw new Error('no pending authorization for this server');
    return verifier;
  }

  /**
   * Kept in memory: the SDK saves discovery before it checks the `resource` and before it uses the
   * authorization server, so a flow that then fails (a mismatched resource, a bad authorization
   * server) must leave nothing behind.
   */
  saveDiscoveryState(discoveryState: OAuthDiscoveryState): void {
    this.pendingDiscovery = discoveryState;
  }

  /** Stores the discovery of a flow that got as far as an authorization URL or tokens. */
  async persistDiscovery(): Promise<void> {
    if (this.pendingDiscovery === undefined) return;
    await this.store.updateClient(this.opts.account, this.opts.serverId, {
      discoveryState: this.pendingDiscovery,
      discoveredFor: this.opts.serverUrl,
    });
    this.pendingDiscovery = undefined;
  }

  /**
   * With `deferStart`: writes the authorization this flow started (its `state`, its code verifier
   * and the discovery it was started with) in `db`, the caller's transaction.
   */
  async commitStart(db: Db): Promise<void> {
    const { account, serverId } = this.opts;
    if (this.started.state) await this.store.setPendingState(account, serverId, this.stateValue, db);
    const patch: Partial<OAuthClientState> = {
      ...(this.started.codeVerifier !== undefined ? { codeVerifier: this.started.codeVerifier } : {}),
      ...(this.pendingDiscovery !== undefined
        ? { discoveryState: this.pendingDiscovery, discoveredFor: this.opts.serverUrl }
        : {}),
    };
    if (Object.keys(patch).length > 0) await this.store.updateClient(account, serverId, patch, db);
    this.pendingDiscovery = undefined;
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    if (this.pendingDiscovery !== undefined) return this.pendingDiscovery;
    if (this.opts.rediscover) return undefined;
    const stored = await this.store.client(this.opts.account, this.opts.serverId);
    return stored.discoveredFor === this.opts.serverUrl ? stored.discoveryState : undefined;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const { account, serverId } = this.opts;
    if (scope === 'all' || scope === 'tokens') await this.store.saveTokens(account, serverId, undefined, null);
    // One read-merge-write of the sealed client state for whatever of it goes.
    const forget: Partial<OAuthClientState> = {};
    if (scope === 'all' || scope === 'client') forget.clientInformation = undefined;
    if (scope === 'all' || scope === 'verifier') forget.codeVerifier = undefined;
    if (scope === 'all' || scope === 'discovery') forget.discoveryState = undefined;
    if (Object.keys(forget).length > 0) await this.store.updateClient(account, serverId, forget);
  }
}
