import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import {
  InvalidGrantError,
  InvalidTargetError,
  InvalidTokenError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { createOAuthMetadata, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import {
  ASSERTION_ALGS,
  ClientCredentialsGrant,
  type ClientAuthMethod,
  type ClientCredentialsStats,
  type MachineClient,
} from './client-credentials-grant.js';
import { fetchClientMetadataDocument, isUrlClientId } from './client-metadata-documents.js';
import { listenOnLoopback } from './loopback.js';
import { startTestMcpServer, type TestMcpServer, type TestMcpServerOptions } from './mcp-test-server.js';

/** The user every authorization is granted to (the test server auto-approves). */
export const TEST_OAUTH_USER = 'test-user';

export interface TestOAuthServerStats extends ClientCredentialsStats {
  registrations: number;
  authorizations: number;
  /** `resource` indicators received at /authorize (RFC 8707). */
  authorizeResources: string[];
  codeExchanges: number;
  refreshes: number;
  /** Refresh tokens presented after they were used or revoked (a rotation violated). */
  refreshReplays: number;
  /** Access tokens the protected server accepted or refused. */
  verified: number;
  refused: number;
  /** Client ID metadata documents fetched (a URL client id, at /authorize, /token and /revoke). */
  metadataDocumentFetches: number;
  /** Why a metadata document was refused, each time one was. */
  metadataDocumentRefusals: string[];
  /** The `application_type` of each dynamic registration (SEP-837), `(omitted)` when absent. */
  registrationApplicationTypes: string[];
}

export interface TestOAuthServerOptions {
  /** Lifetime of access tokens in seconds (default 3600). */
  accessTokenTtlSec?: number;
  /**
   * Advertise `client_id_metadata_document_supported` and take a URL `client_id` by fetching its
   * document ({@link fetchClientMetadataDocument}), trusting `ca` for https (a test's TLS front).
   * Dynamic registration stays available.
   */
  clientIdMetadataDocuments?: { ca?: string };
  /**
   * Take the client credentials grant with these client authentication methods (advertised in the
   * metadata with `client_credentials` and, for `private_key_jwt`, the assertion algorithms).
   * Clients are registered with {@link TestOAuthServer.registerMachineClient}.
   */
  clientCredentials?: { authMethods: ClientAuthMethod[] };
  /**
   * RFC 9207: `advertised` (default) puts `iss` on every authorization response and says so in
   * the metadata (`authorization_response_iss_parameter_supported`); `none` does neither, as an
   * authorization server older than RFC 9207.
   */
  issParameter?: 'advertised' | 'none';
  /** Refuse a dynamic registration whose `application_type` is not this one (`invalid_client_metadata`). */
  requireApplicationType?: 'web' | 'native';
}

export interface TestOAuthServer {
  /** The issuer, `http://127.0.0.1:PORT/`. */
  issuer: string;
  stats: TestOAuthServerStats;
  provider: InMemoryOAuthProvider;
  /** Every registered client, as stored (secrets included: for assertions that they never leak). */
  clients(): OAuthClientInformationFull[];
  /** Every access and refresh token ever issued (for leak assertions). */
  issuedTokens(): string[];
  /** With `clientCredentials`: registers a machine client (its secret, or its public key and algorithm). */
  registerMachineClient(clientId: string, client: MachineClient): void;
  /** The token endpoint URL (an assertion's audience). */
  tokenEndpoint: string;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

interface PendingCode {
  clientId: string;
  params: AuthorizationParams;
}

interface IssuedToken {
  clientId: string;
  expiresAt: number;
  resource?: string;
}

/**
 * An in-memory authorization server behind the SDK's `mcpAuthRouter` (RFC 8414 metadata, dynamic
 * registration, /authorize, /token with PKCE S256 verified by the SDK, /revoke). Authorization is
 * auto-approved for {@link TEST_OAUTH_USER}; codes are single-use; refresh tokens rotate (a used
 * one is revoked, and presenting it again is `invalid_grant`). With `clientIdMetadataDocuments`
 * a URL `client_id` is a client ID metadata document, fetched and checked on every use.
 */
export class InMemoryOAuthProvider implements OAuthServerProvider {
  readonly registered = new Map<string, OAuthClientInformationFull>();
  readonly codes = new Map<string, PendingCode>();
  readonly accessTokens = new Map<string, IssuedToken>();
  readonly refreshTokens = new Map<string, IssuedToken>();
  readonly usedRefreshTokens = new Set<string>();
  readonly all: string[] = [];

  /** Set once the server listens: the `iss` put on authorization responses (undefined: none). */
  responseIssuer: string | undefined;

  constructor(
    readonly stats: TestOAuthServerStats,
    private readonly accessTokenTtlSec: number,
    private readonly metadataDocuments?: { ca?: string },
  ) {}

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: async (id) => {
        if (this.metadataDocuments === undefined || !isUrlClientId(id)) return this.registered.get(id);
        this.stats.metadataDocumentFetches += 1;
        try {
          return await fetchClientMetadataDocument(id, this.metadataDocuments);
        } catch (err) {
          this.stats.metadataDocumentRefusals.push((err as Error).message);
          throw err;
        }
      },
      registerClient: (client) => {
        const full = client as OAuthClientInformationFull;
        this.registered.set(full.client_id, full);
        this.stats.registrations += 1;
        return full;
      },
    };
  }

  async authorize(
    client: OAuthClientInformationFull,
    params: AuthorizationParams,
    res: { redirect(status: number, url: string): void },
  ): Promise<void> {
    this.stats.authorizations += 1;
    if (params.resource) this.stats.authorizeResources.push(params.resource.href);
    const code = randomBytes(16).toString('base64url');
    this.codes.set(code, { clientId: client.client_id, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    if (this.responseIssuer !== undefined) target.searchParams.set('iss', this.responseIssuer);
    res.redirect(302, target.href);
  }

  async challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    const pending = this.codes.get(code);
    if (pending === undefined || pending.clientId !== client.client_id)
      throw new InvalidGrantError('unknown authorization code');
    return pending.params.codeChallenge;
  }

  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    _verifier?: string,
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const pending = this.codes.get(code);
    if (pending === undefined || pending.clientId !== client.client_id)
      throw new InvalidGrantError('unknown authorization code');
    this.codes.delete(code);
    if (redirectUri !== undefined && redirectUri !== pending.params.redirectUri)
      throw new InvalidGrantError('redirect_uri does not match');
    if (pending.params.resource && resource && pending.params.resource.href !== resource.href)
      throw new InvalidTargetError('resource does not match');
    this.stats.codeExchanges += 1;
    return this.issue(client.client_id, (resource ?? pending.params.resource)?.href);
  }

  async exchangeRefreshToken(
    client: OAuthClientInformationFull,
    refreshToken: string,
    _scopes?: string[],
    resource?: URL,
  ): Promise<OAuthTokens> {
    if (this.usedRefreshTokens.has(refreshToken)) {
      this.stats.refreshReplays += 1;
      throw new InvalidGrantError('refresh token already used');
    }
    const issued = this.refreshTokens.get(refreshToken);
    if (issued === undefined || issued.clientId !== client.client_id)
      throw new InvalidGrantError('unknown refresh token');
    this.refreshTokens.delete(refreshToken);
    this.usedRefreshTokens.add(refreshToken);
    this.stats.refreshes += 1;
    return this.issue(client.client_id, resource?.href ?? issued.resource);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const issued = this.accessTokens.get(token);
    if (issued === undefined || issued.expiresAt <= Date.now())
      throw new InvalidTokenError('unknown or expired access token');
    return {
      token,
      clientId: issued.clientId,
      scopes: [],
      expiresAt: Math.floor(issued.expiresAt / 1000),
      ...(issued.resource ? { resource: new URL(issued.resource) } : {}),
    };
  }

  async revokeToken(_client: OAuthClientInformationFull, request: { token: string }): Promise<void> {
    this.accessTokens.delete(request.token);
    if (this.refreshTokens.delete(request.token)) this.usedRefreshTokens.add(request.token);
  }

  /** Makes every access token issued so far expire now (the next call with one is a 401). */
  expireAccessTokens(): void {
    for (const t of this.accessTokens.values()) t.expiresAt = 0;
  }

  /** Revokes every refresh token (a refresh then fails with `invalid_grant`). */
  revokeRefreshTokens(): void {
    for (const t of this.refreshTokens.keys()) this.usedRefreshTokens.add(t);
    this.refreshTokens.clear();
  }

  /** Issues an access token and, unless told otherwise (the client credentials grant), a refresh token. */
  issue(clientId: string, resource: string | undefined, withRefreshToken = true): OAuthTokens {
    const access = `at_${randomBytes(24).toString('base64url')}`;
    const base = { clientId, ...(resource ? { resource } : {}) };
    this.accessTokens.set(access, { ...base, expiresAt: Date.now() + this.accessTokenTtlSec * 1000 });
    this.all.push(access);
    const tokens = { access_token: access, token_type: 'Bearer', expires_in: this.accessTokenTtlSec };
    if (!withRefreshToken) return tokens;
    const refresh = `rt_${randomBytes(24).toString('base64url')}`;
    this.refreshTokens.set(refresh, { ...base, expiresAt: Number.MAX_SAFE_INTEGER });
    this.all.push(refresh);
    return { ...tokens, refresh_token: refresh };
  }
}

/**
 * Starts the authorization server on loopback (the SDK's express app, no rate limits). With
 * `clientCredentials` it also takes the client credentials grant ({@link ClientCredentialsGrant}).
 */
export async function startOAuthServer(opts: TestOAuthServerOptions = {}): Promise<TestOAuthServer> {
  const stats: TestOAuthServerStats = {
    registrations: 0,
    authorizations: 0,
    authorizeResources: [],
    codeExchanges: 0,
    refreshes: 0,
    refreshReplays: 0,
    verified: 0,
    refused: 0,
    metadataDocumentFetches: 0,
    metadataDocumentRefusals: [],
    registrationApplicationTypes: [],
    clientCredentialsGrants: 0,
    clientAuthMethods: [],
    clientCredentialsRefusals: [],
  };
  const provider = new InMemoryOAuthProvider(stats, opts.accessTokenTtlSec ?? 3600, opts.clientIdMetadataDocuments);
  const app = createMcpExpressApp();
  const server: Server = createServer(app);
  const { port, close } = await listenOnLoopback(server);
  const issuer = `http://127.0.0.1:${port}/`;
  const cc = opts.clientCredentials;
  const grant =
    cc &&
    new ClientCredentialsGrant({
      issuer,
      authMethods: cc.authMethods,
      stats,
      issue: (clientId, resource) => provider.issue(clientId, resource, false),
    });
  const issAdvertised = (opts.issParameter ?? 'advertised') === 'advertised';
  if (issAdvertised) provider.responseIssuer = issuer;
  // The SDK's router has no option for these fields: its metadata, served first with them added.
  const base = createOAuthMetadata({ provider, issuerUrl: new URL(issuer) });
  const metadata = {
    ...base,
    ...(issAdvertised ? { authorization_response_iss_parameter_supported: true } : {}),
    ...(opts.clientIdMetadataDocuments !== undefined ? { client_id_metadata_document_supported: true } : {}),
    ...(cc !== undefined
      ? {
          grant_types_supported: [...base.grant_types_supported!, 'client_credentials'],
          token_endpoint_auth_methods_supported: [
            ...new Set([...base.token_endpoint_auth_methods_supported!, ...cc.authMethods]),
          ],
          ...(cc.authMethods.includes('private_key_jwt')
            ? { token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS }
            : {}),
        }
      : {}),
  };
  const body = JSON.stringify(metadata);
  app.get(
    '/.well-known/oauth-authorization-server',
    (_req: IncomingMessage, res: ServerResponse) =>
      void res.writeHead(200, { 'content-type': 'application/json' }).end(body),
  );
  // The SDK's registration handler drops `application_type`: it is read (and checked) first.
  app.post('/register', (req: IncomingMessage & { body?: unknown }, res: ServerResponse, next: () => void) => {
    const raw = (req.body as { application_type?: unknown } | undefined)?.application_type;
    const applicationType = typeof raw === 'string' ? raw : '(omitted)';
    stats.registrationApplicationTypes.push(applicationType);
    if (opts.requireApplicationType !== undefined && applicationType !== opts.requireApplicationType) {
      const refusal = JSON.stringify({
        error: 'invalid_client_metadata',
        error_description: `application_type must be ${opts.requireApplicationType}`,
      });
      res.writeHead(400, { 'content-type': 'application/json' }).end(refusal);
      return;
    }
    next();
  });
  // The SDK's token handler refuses the client credentials grant: that one is answered first.
  if (grant !== undefined) app.post('/token', grant.middleware());
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(issuer),
      authorizationOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      revocationOptions: { rateLimit: false },
    }),
  );
  return {
    issuer,
    stats,
    provider,
    clients: () => [...provider.registered.values()],
    issuedTokens: () => [...provider.all],
    registerMachineClient: (clientId, client) => {
      if (grant === undefined)
        throw new Error('start the authorization server with clientCredentials to register machine clients');
      grant.clients.set(clientId, client);
    },
    tokenEndpoint: new URL('/token', issuer).href,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Whether `token` is a live access token `as` issued, counted in its `verified` or `refused` stats. */
async function issuedBy(as: TestOAuthServer, token: string): Promise<boolean> {
  try {
    await as.provider.verifyAccessToken(token);
    as.stats.verified += 1;
    return true;
  } catch {
    as.stats.refused += 1;
    return false;
  }
}

/**
 * An MCP server protected by `as`: it advertises `resource_metadata` naming `as`, and accepts only
 * `Authorization: Bearer <token>` with a live access token `as` issued.
 */
export async function startProtectedMcpServer(
  as: TestOAuthServer,
  opts: Omit<TestMcpServerOptions, 'oauth'> = {},
): Promise<TestMcpServer> {
  return startTestMcpServer({
    ...opts,
    oauth: {
      authorizationServer: as.issuer,
      verify: (token) => issuedBy(as, token),
    },
  });
}

/** A protected MCP server whose authorization server can be changed while it runs. */
export interface MovableProtectedMcpServer {
  server: TestMcpServer;
  /** From now on the metadata names `as`, and only tokens `as` issued are accepted. */
  moveTo(as: TestOAuthServer): void;
}

/**
 * Like {@link startProtectedMcpServer}, for an authorization-server migration (SEP-2352): after
 * {@link MovableProtectedMcpServer.moveTo} the server's protected-resource metadata names the
 * other authorization server and tokens of the first are refused (401), as when a resource
 * changes its authorization server.
 */
export async function startMovableProtectedMcpServer(
  first: TestOAuthServer,
  opts: Omit<TestMcpServerOptions, 'oauth'> = {},
): Promise<MovableProtectedMcpServer> {
  let current = first;
  const server = await startTestMcpServer({
    ...opts,
    oauth: {
      // Read on every request: the metadata follows the move.
      get authorizationServer() {
        return current.issuer;
      },
      verify: (token) => issuedBy(current, token),
    },
  });
  return { server, moveTo: (as) => void (current = as) };
}
