/**
 * The OAuth 2.1 client pieces of the MCP SDK v2 (`@modelcontextprotocol/client`) that services use to connect to
 * protected remote servers: `auth()` runs RFC 9728 protected-resource discovery, RFC 8414
 * authorization-server discovery, dynamic client registration, PKCE S256, resource indicators,
 * the code exchange and refresh; the caller supplies an {@link OAuthClientProvider} that stores
 * client information and tokens exactly as received.
 */
import { auth, type AuthResult, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { redactErrorChain } from './scrub.js';

export { UnauthorizedError } from '@modelcontextprotocol/client';
export type {
  AddClientAuthentication,
  AuthResult as OAuthResult,
  OAuthClientProvider,
  OAuthDiscoveryState,
} from '@modelcontextprotocol/client';

/**
 * The SDK's `auth()`, with what it throws scrubbed (`./scrub.ts`) of every form of the flow's
 * secrets: the tokens, the client secret, the PKCE verifier and the authorization code, as held
 * before the attempt and after it. An authorization server's error text may echo any of them,
 * and that text reaches log lines and owners' answers.
 */
export async function runOAuth(
  provider: OAuthClientProvider,
  options: Parameters<typeof auth>[1],
): Promise<AuthResult> {
  const before = await oauthSecrets(provider);
  try {
    return await auth(provider, options);
  } catch (err) {
    const codes = options.authorizationCode !== undefined ? [options.authorizationCode] : [];
    redactErrorChain(err, [...before, ...(await oauthSecrets(provider)), ...codes]);
    throw err;
  }
}

/** The secret values a provider holds now (none when it cannot say). */
async function oauthSecrets(provider: OAuthClientProvider): Promise<string[]> {
  const read = async <T>(fn: () => T | Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch {
      return undefined;
    }
  };
  const tokens = await read(() => provider.tokens());
  const client = await read(() => provider.clientInformation());
  const verifier = await read(() => provider.codeVerifier());
  const values = [tokens?.access_token, tokens?.refresh_token, tokens?.id_token, client?.client_secret, verifier];
  return values.filter((v): v is string => typeof v === 'string' && v !== '');
}
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
export function boundedOAuthFetch(
  fetchFn: typeof fetch = fetch,
  maxBytes: number = OAUTH_DOCUMENT_MAX_BYTES,
): typeof fetch {
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
    const out = new Response(res.status === 204 || res.status === 304 ? null : body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
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
