/**
 * The endpoint as an OAuth 2.1 protected resource (MCP authorization; RFC 9728): each agent
 * endpoint `/v1/agents/<agent>/mcp` describes itself at
 * `/.well-known/oauth-protected-resource/v1/agents/<agent>/mcp`, naming the registry as its
 * authorization server, and a 401 points there (`WWW-Authenticate: Bearer resource_metadata=…`).
 * The access tokens the registry issues are agent tokens of the agent the sign-in was for: the
 * endpoint checks them like any other (the same grant, the same revocation channel).
 */

/** RFC 9728 §3: the well-known prefix, followed by the resource's path. */
export const PROTECTED_RESOURCE_PREFIX = '/.well-known/oauth-protected-resource';

/** The OAuth settings (read and checked by `loadEndpointConfig`). */
export interface OAuthResourceOptions {
  /** The authorization server's issuer: the registry's public URL (e.g. `https://mcpx.example.com`). */
  authorizationServer: string;
  /** The endpoint's public base URL (`ENDPOINT_PUBLIC_URL`): resource URLs are built on it; absent: on the request's own origin. */
  publicUrl?: string;
}

/** The resource URL of an agent endpoint path, as clients reach it. */
export function resourceUrl(opts: OAuthResourceOptions, requestUrl: URL, path: string): string {
  return `${opts.publicUrl ?? requestUrl.origin}${path.replace(/\/+$/, '')}`;
}

/** Where the endpoint at `path` describes itself. */
export function resourceMetadataUrl(opts: OAuthResourceOptions, requestUrl: URL, path: string): string {
  return `${opts.publicUrl ?? requestUrl.origin}${PROTECTED_RESOURCE_PREFIX}${path.replace(/\/+$/, '')}`;
}

/** RFC 9728 metadata of one agent endpoint. */
export function protectedResourceMetadata(
  opts: OAuthResourceOptions,
  requestUrl: URL,
  path: string,
): Record<string, unknown> {
  return {
    resource: resourceUrl(opts, requestUrl, path),
    authorization_servers: [opts.authorizationServer],
    bearer_methods_supported: ['header'],
    resource_name: 'mcpx agent endpoint',
  };
}

/** The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3, RFC 9728 §5.1). */
export function bearerChallenge(
  opts: OAuthResourceOptions | undefined,
  requestUrl: URL,
  path: string,
  invalid: boolean,
): string {
  const parts = ['Bearer realm="mcpx"'];
  if (opts !== undefined) parts.push(`resource_metadata="${resourceMetadataUrl(opts, requestUrl, path)}"`);
  if (invalid) parts.push('error="invalid_token"');
  return parts.join(', ');
}
