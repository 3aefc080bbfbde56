import { invalidInput, type ActionEnvelope } from '@mcpx/contracts';

const NONCE_RE = /^[A-Za-z0-9_-]{8,64}$/;
const PRINCIPAL_RE = /^[A-Za-z0-9_-]{43}$/;
/** An ed25519 signature: 64 bytes, 86 base64url characters. */
const SIG_RE = /^[A-Za-z0-9_-]{86}$/;

/**
 * Base64url with no other spelling of the same bytes: the unused low bits of the last character
 * are zero. Without it one signature (or key) has several spellings that verify alike, and an
 * envelope could be altered without the signature check seeing it.
 */
function canonicalBase64url(s: string): boolean {
  return Buffer.from(s, 'base64url').toString('base64url') === s;
}
const FIELDS = new Set(['signer', 'account', 'ts', 'nonce', 'action', 'sig']);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/**
 * Checks a decoded body's shape as an envelope, naming the first malformed field with an
 * `invalid_input`. It reads only the six fields (never walks `action`), so its cost does not
 * depend on the body; bounding the body is the decoder's job (`decodeStrict`, `checkValueBounds`).
 */
export function parseEnvelope(body: unknown): ActionEnvelope {
  if (!isPlainObject(body)) throw invalidInput('envelope', 'must be an object');
  const { signer, account, ts, nonce, action, sig } = body;
  if (typeof signer !== 'string' || !PRINCIPAL_RE.test(signer) || !canonicalBase64url(signer))
    throw invalidInput('signer', 'must be an ed25519 principal (base64url, 43 chars)');
  if (typeof account !== 'string' || !PRINCIPAL_RE.test(account) || !canonicalBase64url(account))
    throw invalidInput('account', 'must be an account principal');
  if (typeof ts !== 'number' || !Number.isSafeInteger(ts))
    throw invalidInput('ts', 'must be an integer (milliseconds since the epoch)');
  if (typeof nonce !== 'string' || !NONCE_RE.test(nonce))
    throw invalidInput('nonce', 'must be 8-64 base64url characters');
  if (!isPlainObject(action) || typeof action.type !== 'string') throw invalidInput('action.type', 'is required');
  if (typeof sig !== 'string') throw invalidInput('sig', 'is required');
  if (!SIG_RE.test(sig) || !canonicalBase64url(sig))
    throw invalidInput('sig', 'must be an ed25519 signature (canonical base64url, 86 chars)');
  for (const k of Object.keys(body)) {
    // A key from outside is not echoed whole: it could be long, or carry terminal escapes.
    if (!FIELDS.has(k))
      throw invalidInput(/^[A-Za-z0-9_-]{1,32}$/.test(k) ? k : 'envelope', 'is not a field of the envelope');
  }
  return body as unknown as ActionEnvelope;
}
