import { FieldRules, Transports, type Shaped } from '@mcpx/contracts';
import { oauthSecretAad, vendorTokensAad, type Sealed, type SecretBox } from '@mcpx/secrets';
import { cborShape, jsonShape } from './reads/stored-shape.js';

/**
 * The stored shapes of a server's credentials, defined once: the registry writes them and the
 * proxy reads them (through ./server-credentials.ts), so neither keeps a copy of the other's.
 */

/**
 * How a custom server authenticates (docs/servers.md#auth-methods), `config.auth` of SetMcpServer:
 * - `oauth`: OAuth 2.1 against the server (the registry's oauth/ folder);
 * - `bearer`: a pasted token, sealed as the server's `Authorization` secret header and sent as
 *   `Authorization: Bearer <token>`;
 * - `headers`: custom headers, every one sealed as a secret header;
 * - `none`: nothing is sent; any header or token is refused.
 * Absent keeps the original behaviour (static headers in the clear, secret headers sealed) and reads
 * as `headers` when any header is configured, else `none`.
 */
export const AuthMethods = { oauth: 'oauth', bearer: 'bearer', headers: 'headers', none: 'none' } as const;
export type AuthMethod = (typeof AuthMethods)[keyof typeof AuthMethods];

/**
 * The grants a pre-registered client uses: `authorization_code` (an owner signs in, the default)
 * or `client_credentials` (machine to machine: the registry asks the token endpoint directly with
 * the client's secret or a `private_key_jwt` assertion; nobody signs in).
 */
export const OAuthGrants = {
  authorizationCode: 'authorization_code',
  clientCredentials: 'client_credentials',
} as const;
export type OAuthGrant = (typeof OAuthGrants)[keyof typeof OAuthGrants];

/** Algorithms a `private_key_jwt` assertion may be signed with (what the SDK's signer takes). */
export const CLIENT_ASSERTION_ALGS = [
  'ES256',
  'ES384',
  'ES512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
] as const;
export type ClientAssertionAlg = (typeof CLIENT_ASSERTION_ALGS)[number];

const { str, anyStr, num, optional, oneOf, mapOf, shape, checkedMap } = FieldRules;

/** `config.oauth` as the server's config keeps it (in the clear): which credential is sealed, never its value. */
const storedOAuthClientTable = {
  clientId: str,
  grant: oneOf(OAuthGrants.authorizationCode, OAuthGrants.clientCredentials),
  credential: optional(oneOf('client_secret', 'private_key')),
  keyAlg: optional(oneOf(...CLIENT_ASSERTION_ALGS)),
  scope: optional(anyStr),
};
export type StoredOAuthClient = Shaped<typeof storedOAuthClientTable>;

/**
 * `registry.mcp_servers.config_cbor`, defined once by its field rules (the type follows from
 * them): static headers in the clear, secret headers as references to account secrets. Kept
 * whole as stored (a field this version does not know survives a read and a rewrite).
 */
const storedServerConfigTable = {
  url: str,
  transport: optional(oneOf(Transports.http, Transports.sse)),
  headers: optional(mapOf(anyStr)),
  /** header name → secret name (only the server's own, {@link headerSecretName}, is ever sent) */
  secretRefs: optional(mapOf(str)),
  /**
   * `oauth`: the registry runs OAuth 2.1 against the server and sends the token it holds;
   * `bearer`/`headers`/`none`: see {@link AuthMethods} (a bearer token is the `Authorization` secret ref).
   */
  auth: optional(oneOf(AuthMethods.oauth, AuthMethods.bearer, AuthMethods.headers, AuthMethods.none)),
  /** `auth: 'oauth'` with a pre-registered client: its id and grant; its secret or key is sealed elsewhere. */
  oauthClient: optional(shape(storedOAuthClientTable)),
  /** Contract pinning (`off` | `review` | `strict`; absent: `off`), see the registry's pins/pin-policy.ts. */
  pin: optional(oneOf('off', 'review', 'strict')),
};
export type StoredServerConfig = Shaped<typeof storedServerConfigTable>;

/** The column's shape: its writer encodes through it, its readers decode through it (never a cast). */
export const ServerConfigColumn = cborShape('registry.mcp_servers.config_cbor', checkedMap(storedServerConfigTable));

/** A stored server config from its column, checked field by field ({@link StoredShapeError} naming the first wrong one). */
export function decodeServerConfig(bytes: Uint8Array): StoredServerConfig {
  return ServerConfigColumn.decode(bytes);
}

/** The secret name that holds a server's header value: `mcp-<server>-<header, lowercased>`. */
export function headerSecretName(server: string, header: string): string {
  return `mcp-${server}-${header.toLowerCase()}`;
}

/** Whether `ref` is the server's own secret for `header` (the only kind a server may reference, and the only kind sent). */
export function isOwnSecretRef(server: string, header: string, ref: string): boolean {
  return ref === headerSecretName(server, header);
}

/**
 * A token response as the registry keeps it: exactly as the authorization server sent it (RFC 6749
 * §5.1 names, snake_case), issuer and all, so the SDK reads back what it stored. The one casing of
 * every stored token (a vendor connection's too, {@link sealVendorTokens}). Checked field by
 * field when opened, kept whole (the fields the rules do not name go back to the SDK unchanged).
 */
const storedOAuthTokensTable = {
  access_token: str,
  token_type: str,
  refresh_token: optional(anyStr),
  expires_in: optional(num),
  scope: optional(anyStr),
  id_token: optional(anyStr),
};
export type StoredOAuthTokens = Shaped<typeof storedOAuthTokensTable>;

/** The opened `registry.oauth_connections.tokens_sealed` (JSON inside the seal), checked by its rules. */
const SealedOAuthTokens = jsonShape('registry.oauth_connections.tokens_sealed', checkedMap(storedOAuthTokensTable));

/** The sealed token columns of `registry.oauth_connections`. */
export interface SealedTokenColumns {
  tokens_key_id: string | null;
  tokens_sealed: Uint8Array | null;
  tokens_server_url: string | null;
}

/** Seals a server's tokens (bound to the account, the server and `tokens`: a copied row does not open). */
export function sealOAuthTokens(box: SecretBox, account: string, serverId: string, tokens: StoredOAuthTokens): Sealed {
  return box.seal(JSON.stringify(tokens), oauthSecretAad(account, serverId, 'tokens'));
}

/**
 * A server's stored tokens, only while the server keeps the URL they were issued for (a server
 * moved elsewhere does not get them); undefined when there are none.
 */
export function openOAuthTokens(
  box: SecretBox,
  account: string,
  serverId: string,
  row: SealedTokenColumns | undefined,
  serverUrl: string,
): StoredOAuthTokens | undefined {
  if (!row?.tokens_key_id || !row.tokens_sealed || row.tokens_server_url !== serverUrl) return undefined;
  const opened = box.open(
    { keyId: row.tokens_key_id, ciphertext: row.tokens_sealed },
    oauthSecretAad(account, serverId, 'tokens'),
  );
  return SealedOAuthTokens.check(JSON.parse(opened));
}

/** The tokens of a vendor connection (SetVendorConnection's names; `expiresAt` ISO 8601). */
export interface VendorTokens {
  accessToken: string;
  refreshToken?: string;
  expiresAt?: string;
}

/** A vendor connection's tokens as sealed: the stored token casing (RFC 6749 names), the expiry as an ISO 8601 date. */
interface SealedVendorTokens {
  access_token: string;
  refresh_token?: string;
  expires_at?: string;
}

/** Seals a vendor connection's tokens in the one stored casing. */
export function sealVendorTokens(box: SecretBox, account: string, vendor: string, tokens: VendorTokens): Sealed {
  const stored: SealedVendorTokens = {
    access_token: tokens.accessToken,
    ...(tokens.refreshToken !== undefined ? { refresh_token: tokens.refreshToken } : {}),
    ...(tokens.expiresAt !== undefined ? { expires_at: tokens.expiresAt } : {}),
  };
  return box.seal(JSON.stringify(stored), vendorTokensAad(account, vendor));
}

/**
 * Opens a vendor connection's tokens. Rows sealed before the one casing (`accessToken`,
 * `refreshToken`, `expiresAt`) read the same; a value that is not a string is absent.
 */
export function openVendorTokens(
  box: SecretBox,
  account: string,
  vendor: string,
  sealed: { tokens_key_id: string; tokens_sealed: Uint8Array },
): VendorTokens {
  const raw = JSON.parse(
    box.open({ keyId: sealed.tokens_key_id, ciphertext: sealed.tokens_sealed }, vendorTokensAad(account, vendor)),
  ) as Record<string, unknown>;
  const pick = (snake: string, camel: string): string | undefined => {
    const v = raw[snake] ?? raw[camel];
    return typeof v === 'string' ? v : undefined;
  };
  const refreshToken = pick('refresh_token', 'refreshToken');
  const expiresAt = pick('expires_at', 'expiresAt');
  return {
    accessToken: pick('access_token', 'accessToken') ?? '',
    ...(refreshToken !== undefined ? { refreshToken } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}
