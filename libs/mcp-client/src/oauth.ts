/**
 * The OAuth 2.1 client pieces of the MCP SDK (`client/auth.js`) that services use to connect to
 * protected remote servers: `auth()` runs RFC 9728 protected-resource discovery, RFC 8414
 * authorization-server discovery, dynamic client registration, PKCE S256, resource indicators,
 * the code exchange and refresh; the caller supplies an {@link OAuthClientProvider} that stores
 * client information and tokens exactly as received.
 */
export { auth as runOAuth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
export type { AuthResult as OAuthResult, OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
export type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** The `resource_metadata` URL of a `WWW-Authenticate: Bearer resource_metadata="…"` challenge. */
export function resourceMetadataUrl(wwwAuthenticate: string | undefined): URL | undefined {
  const match = wwwAuthenticate?.match(/resource_metadata\s*=\s*"([^"]+)"|resource_metadata\s*=\s*([^\s,]+)/i);
  const raw = match?.[1] ?? match?.[2];
  if (raw === undefined) return undefined;
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}
