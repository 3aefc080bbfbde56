import { OutboundRefusedError, findOutboundError } from '@mcpx/outbound';

/** The largest client ID metadata document read (the draft suggests a few kilobytes). */
export const MAX_CLIENT_METADATA_BYTES = 16 * 1024;
/** How long fetching one may take, connection included. */
export const CLIENT_METADATA_TIMEOUT_MS = 5_000;
const MAX_URL_LENGTH = 2_048;
const MAX_REDIRECT_URIS = 16;
const MAX_NAME_LENGTH = 100;

/** A client as its metadata document describes it (only what the sign-in uses). */
export interface ClientMetadata {
  /** The document's URL, which is the client id. */
  clientId: string;
  /** `client_name`, or the document's host: said to the owner as unverified. */
  clientName: string;
  redirectUris: string[];
}

/** A client id or metadata document refused: `invalid_client`, with what is wrong (never a body's bytes). */
export class ClientMetadataError extends Error {
  readonly code = 'invalid_client';
}

/** Whether `u` is a loopback redirect (http is allowed there only: a native client's local listener). */
function isLoopback(u: URL): boolean {
  return u.hostname === '127.0.0.1' || u.hostname === '[::1]' || u.hostname === 'localhost';
}

/** The client id as a document URL: https, a path, no fragment, no credentials, bounded. */
export function parseClientIdUrl(clientId: string): URL {
  if (clientId.length > MAX_URL_LENGTH || !URL.canParse(clientId))
    throw new ClientMetadataError('client_id must be the https URL of a client ID metadata document');
  const url = new URL(clientId);
  if (url.protocol !== 'https:') throw new ClientMetadataError('client_id must be an https URL');
  if (url.pathname === '/' || url.hash !== '' || url.username !== '' || url.password !== '')
    throw new ClientMetadataError('client_id must be an https URL with a path, no fragment and no credentials');
  return url;
}

function checkRedirectUri(value: unknown, i: number): string {
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH || !URL.canParse(value))
    throw new ClientMetadataError(`client metadata document: redirect_uris[${i}] is not a URL`);
  const u = new URL(value);
  if (u.hash !== '') throw new ClientMetadataError(`client metadata document: redirect_uris[${i}] has a fragment`);
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopback(u)))
    throw new ClientMetadataError(`client metadata document: redirect_uris[${i}] must be https (or http on loopback)`);
  return value;
}

/** What the outbound policy said when it refused the fetch (a private address, plain http), if it did. */
function outboundRefusal(err: unknown): string | undefined {
  let current = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof OutboundRefusedError) return current.message;
    current = current.cause;
  }
  return findOutboundError(err)?.message;
}

/** Reads at most `max` bytes of a body; more is a refusal (the rest is not read). */
async function boundedText(res: Response, max: number): Promise<string> {
  const reader = res.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw new ClientMetadataError(`client metadata document is larger than ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Fetches and checks a client ID metadata document through `fetch` (the authorization server's outbound
 * fetch: https only, private and metadata addresses refused unless the operator allows them, the
 * address checked is the one connected to), bounded in time and size, no redirects. The document
 * must name exactly its own URL as `client_id`, be a public client (`token_endpoint_auth_method`
 * none, no secret) and list its redirect URIs. Every refusal is a {@link ClientMetadataError}.
 */
export async function fetchClientMetadata(fetch: typeof globalThis.fetch, clientId: string): Promise<ClientMetadata> {
  const url = parseClientIdUrl(clientId);
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(CLIENT_METADATA_TIMEOUT_MS),
    });
  } catch (err) {
    const refused = outboundRefusal(err);
    if (refused !== undefined) throw new ClientMetadataError(`client metadata document may not be fetched: ${refused}`);
    throw new ClientMetadataError(`client metadata document could not be fetched from ${url.host}`);
  }
  let text: string;
  try {
    if (res.status !== 200) throw new ClientMetadataError(`client metadata document answered HTTP ${res.status}`);
    const type = res.headers.get('content-type') ?? '';
    if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type))
      throw new ClientMetadataError('client metadata document is not application/json');
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > MAX_CLIENT_METADATA_BYTES)
      throw new ClientMetadataError(`client metadata document is larger than ${MAX_CLIENT_METADATA_BYTES} bytes`);
    text = await boundedText(res, MAX_CLIENT_METADATA_BYTES);
  } catch (err) {
    await res.body?.cancel().catch(() => undefined);
    if (err instanceof ClientMetadataError) throw err;
    throw new ClientMetadataError(`client metadata document could not be read from ${url.host}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ClientMetadataError('client metadata document is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new ClientMetadataError('client metadata document is not a JSON object');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId)
    throw new ClientMetadataError('client metadata document: client_id is not the URL it was fetched from');
  if ('client_secret' in d || 'client_secret_expires_at' in d)
    throw new ClientMetadataError('client metadata document must not carry a client secret');
  const method = d.token_endpoint_auth_method ?? 'none';
  if (method !== 'none')
    throw new ClientMetadataError(
      'client metadata document: token_endpoint_auth_method must be none (a public client)',
    );
  if (!Array.isArray(d.redirect_uris) || d.redirect_uris.length === 0 || d.redirect_uris.length > MAX_REDIRECT_URIS)
    throw new ClientMetadataError(`client metadata document: redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`);
  const redirectUris = d.redirect_uris.map(checkRedirectUri);
  if (d.grant_types !== undefined && !(Array.isArray(d.grant_types) && d.grant_types.includes('authorization_code')))
    throw new ClientMetadataError('client metadata document: grant_types must include authorization_code');
  if (d.response_types !== undefined && !(Array.isArray(d.response_types) && d.response_types.includes('code')))
    throw new ClientMetadataError('client metadata document: response_types must include code');
  const rawName = typeof d.client_name === 'string' ? d.client_name.replace(/\p{C}/gu, '').trim() : '';
  return { clientId, clientName: rawName === '' ? url.host : rawName.slice(0, MAX_NAME_LENGTH), redirectUris };
}
