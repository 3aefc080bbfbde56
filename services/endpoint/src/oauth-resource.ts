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

export interface OAuthResourceOptions {
  /** The authorization server's issuer: the registry's public URL (e.g. `https://mcpx.example.com`). */
  authorizationServer: string;
  /** The endpoint's public base URL (`ENDPOINT_PUBLIC_URL`): resource URLs are built on it; absent: on the request's own origin. */
  publicUrl?: string;
}

function httpUrl(value: string, name: string): string {
  const v = value.trim().replace(/\/+$/, '');
  if (!URL.canParse(v) || !/^https?:$/.test(new URL(v).protocol) || new URL(v).search !== '' || new URL(v).hash !== '') throw new Error(`${name} must be an http(s) URL without query or fragment`);
  return v;
}

/**
 * OAuth sign-in settings from the environment: `ENDPOINT_AUTHORIZATION_SERVER` (the registry's
 * public URL; unset: no OAuth, agent tokens only) and `ENDPOINT_PUBLIC_URL`. A malformed value
 * stops the start, naming the variable.
 */
export function oauthResourceFromEnv(env: NodeJS.ProcessEnv): OAuthResourceOptions | undefined {
  const as = env.ENDPOINT_AUTHORIZATION_SERVER;
  if (as === undefined || as.trim() === '') return undefined;
  const publicUrl = env.ENDPOINT_PUBLIC_URL;
  return { authorizationServer: httpUrl(as, 'ENDPOINT_AUTHORIZATION_SERVER'), ...(publicUrl !== undefined && publicUrl.trim() !== '' ? { publicUrl: httpUrl(publicUrl, 'ENDPOINT_PUBLIC_URL') } : {}) };
}

/** The settings checked once (a malformed URL fails the start). */
export function checkOAuthResource(opts: OAuthResourceOptions): OAuthResourceOptions {
  return { authorizationServer: httpUrl(opts.authorizationServer, 'authorizationServer'), ...(opts.publicUrl !== undefined ? { publicUrl: httpUrl(opts.publicUrl, 'publicUrl') } : {}) };
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
export function protectedResourceMetadata(opts: OAuthResourceOptions, requestUrl: URL, path: string): Record<string, unknown> {
  return {
    resource: resourceUrl(opts, requestUrl, path),
    authorization_servers: [opts.authorizationServer],
    bearer_methods_supported: ['header'],
    resource_name: 'mcpx agent endpoint',
  };
}

/** The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3, RFC 9728 §5.1). */
export function bearerChallenge(opts: OAuthResourceOptions | undefined, requestUrl: URL, path: string, invalid: boolean): string {
  const parts = ['Bearer realm="mcpx"'];
  if (opts !== undefined) parts.push(`resource_metadata="${resourceMetadataUrl(opts, requestUrl, path)}"`);
  if (invalid) parts.push('error="invalid_token"');
  return parts.join(', ');
}
