/**
 * Recognises the SDK's refusals of an authorization response that is not from the authorization
 * server the flow was started at (a mix-up, RFC 9207; or the server now names another one,
 * SEP-2352). Matched by name: the classes are the SDK's and the registry reaches the SDK only
 * through @mcpx/mcp-client, which does not re-export them.
 *
 * Returns which check refused it (safe to log: no value of the response), or undefined.
 */
export function mixUpError(err: unknown): 'iss' | 'authorization_server' | undefined {
  const e = err as { name?: unknown; kind?: unknown } | null;
  if (e === null || typeof e !== 'object') return undefined;
  if (e.name === 'IssuerMismatchError' && e.kind === 'authorization_response') return 'iss';
  if (e.name === 'AuthorizationServerMismatchError') return 'authorization_server';
  return undefined;
}
