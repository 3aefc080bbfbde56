import { invalidInput } from '@mcpx/contracts';

/** `config.oauth` of SetMcpServer: a client the owner registered with the authorization server. */
export interface PreRegisteredClient {
  clientId: string;
  /** A confidential client's secret: sealed with the OAuth state, never stored in the config. */
  clientSecret?: string;
}

const MAX_CLIENT_ID_BYTES = 512;
const MAX_CLIENT_SECRET_BYTES = 4096;

/**
 * Validates `config.oauth` (only with `auth: 'oauth'`). Absent: dynamic client registration (or a
 * client ID metadata document, where the authorization server supports it) as before. Errors name
 * the field and never echo a value.
 */
export function validatePreRegisteredClient(raw: unknown, auth: unknown): PreRegisteredClient | undefined {
  if (raw === undefined) return undefined;
  if (auth !== 'oauth') throw invalidInput('config.oauth', 'is only taken with auth oauth');
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidInput('config.oauth', 'must be an object {clientId, clientSecret?}');
  const o = raw as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => k !== 'clientId' && k !== 'clientSecret');
  if (extra !== undefined) throw invalidInput(`config.oauth.${extra.slice(0, 40)}`, 'is not a known field');
  if (typeof o.clientId !== 'string' || o.clientId === '' || Buffer.byteLength(o.clientId) > MAX_CLIENT_ID_BYTES || hasControlCharacter(o.clientId)) {
    throw invalidInput('config.oauth.clientId', `must be a non-empty string of at most ${MAX_CLIENT_ID_BYTES} bytes`);
  }
  if (o.clientSecret === undefined) return { clientId: o.clientId };
  if (typeof o.clientSecret !== 'string' || o.clientSecret === '' || Buffer.byteLength(o.clientSecret) > MAX_CLIENT_SECRET_BYTES) {
    throw invalidInput('config.oauth.clientSecret', `must be a non-empty string of at most ${MAX_CLIENT_SECRET_BYTES} bytes`);
  }
  return { clientId: o.clientId, clientSecret: o.clientSecret };
}

function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) < 0x20 || s.charCodeAt(i) === 0x7f) return true;
  return false;
}
