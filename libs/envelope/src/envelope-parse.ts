import { invalidInput, type ActionEnvelope } from '@mcpx/contracts';

const NONCE_RE = /^[A-Za-z0-9_-]{8,64}$/;
const PRINCIPAL_RE = /^[A-Za-z0-9_-]{43}$/;
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
  if (typeof signer !== 'string' || !PRINCIPAL_RE.test(signer)) throw invalidInput('signer', 'must be an ed25519 principal (base64url, 43 chars)');
  if (typeof account !== 'string' || !PRINCIPAL_RE.test(account)) throw invalidInput('account', 'must be an account principal');
  if (typeof ts !== 'number' || !Number.isSafeInteger(ts)) throw invalidInput('ts', 'must be an integer (milliseconds since the epoch)');
  if (typeof nonce !== 'string' || !NONCE_RE.test(nonce)) throw invalidInput('nonce', 'must be 8-64 base64url characters');
  if (!isPlainObject(action) || typeof action.type !== 'string') throw invalidInput('action.type', 'is required');
  if (typeof sig !== 'string') throw invalidInput('sig', 'is required');
  for (const k of Object.keys(body)) {
    // A key from outside is not echoed whole: it could be long, or carry terminal escapes.
    if (!FIELDS.has(k)) throw invalidInput(/^[A-Za-z0-9_-]{1,32}$/.test(k) ? k : 'envelope', 'is not a field of the envelope');
  }
  return body as unknown as ActionEnvelope;
}
