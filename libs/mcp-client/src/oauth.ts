/**
 * The OAuth 2.1 client pieces of the MCP SDK v2 (`@modelcontextprotocol/client`) that services use to connect to
 * protected remote servers: `auth()` runs RFC 9728 protected-resource discovery, RFC 8414
 * authorization-server discovery, dynamic client registration, PKCE S256, resource indicators,
 * the code exchange and refresh; the caller supplies an {@link OAuthClientProvider} that stores
 * client information and tokens exactly as received.
 */
export { auth as runOAuth, UnauthorizedError } from '@modelcontextprotocol/client';
export type { AddClientAuthentication, AuthResult as OAuthResult, OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/client';
/**
 * RFC 7523 `private_key_jwt` client authentication for the client credentials grant: signs a
 * short-lived assertion (iss = sub = client id, aud = the authorization server's issuer, a fresh
 * jti) with a PKCS#8 key for each token request.
 */
export { createPrivateKeyJwtAuth } from '@modelcontextprotocol/client';
export type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/client';

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

/** Largest OAuth document (metadata, registration or token response) read from a remote server. */
export const OAUTH_DOCUMENT_MAX_BYTES = 64 * 1024;

/** A remote server's OAuth document that is too large or malformed: the owner's to fix, not ours. */
export class OAuthDocumentError extends Error {
  override readonly name = 'OAuthDocumentError';
}

/**
 * Wraps the fetch used for OAuth exchanges so that no response body larger than `maxBytes` is
 * read (the SDK parses whatever it gets): a bigger one fails with {@link OAuthDocumentError}
 * naming the URL, and the rest of the body is discarded unread.
 */
export function boundedOAuthFetch(fetchFn: typeof fetch = fetch, maxBytes: number = OAUTH_DOCUMENT_MAX_BYTES): typeof fetch {
  return async (input, init) => {
    const res = await fetchFn(input, init);
    const where = safeWhere(res.url || (input instanceof Request ? input.url : String(input)));
    const declared = Number(res.headers.get('content-length') ?? '');
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body?.cancel().catch(() => undefined);
      throw new OAuthDocumentError(`the OAuth document at ${where} is larger than ${maxBytes / 1024} KiB`);
    }
    if (res.body === null) return res;
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new OAuthDocumentError(`the OAuth document at ${where} is larger than ${maxBytes / 1024} KiB`);
      }
      chunks.push(value);
    }
    const body = Buffer.concat(chunks);
    const out = new Response(res.status === 204 || res.status === 304 ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
    Object.defineProperty(out, 'url', { value: res.url });
    return out;
  };
}

/**
 * A short, owner-facing description of why an OAuth step failed: too-large and malformed
 * documents (invalid JSON, or metadata that does not match its schema) say so plainly.
 */
export function describeOAuthError(err: unknown): string {
  if (err instanceof OAuthDocumentError) return err.message;
  if (err instanceof SyntaxError) return `an OAuth document is not valid JSON (${err.message.slice(0, 120)})`;
  const e = err as { name?: string; issues?: Array<{ path?: PropertyKey[]; message?: string }>; message?: string };
  if (e?.name === 'ZodError' && Array.isArray(e.issues)) {
    const first = e.issues[0];
    const path = first?.path?.map(String).join('.') || '(root)';
    return `malformed OAuth metadata: ${path}: ${first?.message ?? 'invalid'}`;
  }
  return (err instanceof Error ? err.message : String(err)).slice(0, 300);
}

function safeWhere(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.origin}${u.pathname}`;
  } catch {
    return 'the authorization server';
  }
}
