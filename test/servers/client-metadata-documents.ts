import { InvalidClientError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { OAuthClientMetadataSchema, type OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { httpsGet } from './tls-front.js';

/** Largest client metadata document the test authorization server reads (the draft suggests small). */
const MAX_DOCUMENT_BYTES = 16 * 1024;

/** Whether a `client_id` names a client ID metadata document rather than a registered client. */
export function isUrlClientId(clientId: string): boolean {
  return /^https?:\/\//i.test(clientId);
}

/**
 * What an authorization server that supports client ID metadata documents does with a URL
 * `client_id`: fetch it (https only, a path, no fragment; bounded; trusting `ca`), and accept it
 * only as a public client whose document names exactly that URL as its `client_id`. The SDK's
 * handlers then check `redirect_uri` against the document's `redirect_uris`. Every refusal is an
 * `invalid_client` that says what is wrong with the document.
 */
export async function fetchClientMetadataDocument(
  clientId: string,
  opts: { ca?: string } = {},
): Promise<OAuthClientInformationFull> {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw new InvalidClientError('client_id is not a URL');
  }
  if (url.protocol !== 'https:' || url.pathname === '/' || url.hash !== '')
    throw new InvalidClientError('client_id must be an https URL with a path');
  let res;
  try {
    res = await httpsGet(url.href, {
      headers: { accept: 'application/json' },
      maxBytes: MAX_DOCUMENT_BYTES,
      timeoutMs: 5_000,
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
    });
  } catch (err) {
    throw new InvalidClientError(`client metadata document could not be fetched: ${(err as Error).message}`);
  }
  if (res.status !== 200) throw new InvalidClientError(`client metadata document answered ${res.status}`);
  if (!String(res.headers['content-type'] ?? '').startsWith('application/json'))
    throw new InvalidClientError('client metadata document is not application/json');
  let raw: unknown;
  try {
    raw = JSON.parse(res.text);
  } catch {
    throw new InvalidClientError('client metadata document is not JSON');
  }
  const doc = raw as Record<string, unknown>;
  if (doc.client_id !== clientId)
    throw new InvalidClientError('client metadata document: client_id does not match the URL it was fetched from');
  if ('client_secret' in doc || 'client_secret_expires_at' in doc)
    throw new InvalidClientError('client metadata document must not carry a client secret');
  const parsed = OAuthClientMetadataSchema.safeParse(raw);
  if (!parsed.success)
    throw new InvalidClientError(
      `client metadata document is malformed: ${parsed.error.issues[0]?.path.join('.') ?? ''}`,
    );
  if (parsed.data.redirect_uris.length === 0)
    throw new InvalidClientError('client metadata document lists no redirect_uris');
  const method = parsed.data.token_endpoint_auth_method ?? 'none';
  if (method !== 'none')
    throw new InvalidClientError(
      `client metadata document: token_endpoint_auth_method ${method} needs a shared secret`,
    );
  return { ...parsed.data, client_id: clientId };
}
