import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OAUTH_CALLBACK_PATH, OAUTH_CLIENT_METADATA_PATH } from './paths.js';

/** The name authorization servers show the owner on their consent screen. */
export const OAUTH_CLIENT_NAME = 'mcp-connector';

/** How long an authorization server may cache the document (it changes only with the public URL). */
const CLIENT_METADATA_MAX_AGE_SEC = 3600;

/** The document: a public client (no secret; PKCE), redirected only to the registry's callback. */
export interface ClientMetadataDocument {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
}

/**
 * The document served for a registry whose public base URL is `publicUrl` (no trailing slash, as
 * the callback URL is built): its `client_id` is exactly the URL it is served at.
 */
export function clientMetadataDocument(publicUrl: string): ClientMetadataDocument {
  return {
    client_id: `${publicUrl}${OAUTH_CLIENT_METADATA_PATH}`,
    client_name: OAUTH_CLIENT_NAME,
    redirect_uris: [`${publicUrl}${OAUTH_CALLBACK_PATH}`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/**
 * Whether `url` may be a client id: the spec (and the SDK's `auth()`, which throws otherwise)
 * wants an https URL with a path.
 */
export function isClientMetadataUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' && u.pathname !== '/' && u.hash === '';
  } catch {
    return false;
  }
}

/**
 * The client id the registry offers where an authorization server supports client ID metadata
 * documents, or undefined, and then the registry registers dynamically as before.
 *
 * Decided: only an https public URL is offered. The local and test profiles serve plain http on
 * loopback, and an http client id is refused by the spec, by the SDK and by any real
 * authorization server, so offering one would break an authorization that registration would
 * have completed; the allow-list for plain http is about the servers the registry calls, not
 * about the address authorization servers fetch the registry's identity from. An operator gets
 * client ID metadata documents by setting the registry's public URL (`REGISTRY_PUBLIC_URL`) to
 * the https address its TLS front serves, which authorization servers must be able to reach.
 */
export function clientMetadataDocumentUrl(publicUrl: string): string | undefined {
  const url = clientMetadataDocument(publicUrl).client_id;
  return isClientMetadataUrl(url) ? url : undefined;
}

/**
 * Serves the document built from the public URL known now (a test's port is known only once the
 * registry listens). Public and cacheable; a matching `If-None-Match` gets a 304.
 */
export function clientMetadataDocumentHandler(
  publicUrl: () => string,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const body = Buffer.from(JSON.stringify(clientMetadataDocument(publicUrl())));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    const headers = { 'cache-control': `public, max-age=${CLIENT_METADATA_MAX_AGE_SEC}`, etag };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  };
}
