// The console is a client of the signed action API, like the CLI. The account key lives in this
// browser as a non-extractable WebCrypto key in IndexedDB (key-store.js) and signs every action
// with Ed25519 over the canonical DAG-CBOR encoding (cbor.js), exactly the bytes the CLI signs.
import { encodeCanonical } from './cbor.js';
import { clearStoredKey, loadStoredKey, storeKey, takeLegacyKeyFile } from './key-store.js';

/** How many times, and how long at most each time, an action refused with rate_limited is sent again. */
const RATE_RETRIES = 3;
const RATE_RETRY_MAX_MS = 5_000;

const PKCS8_PREFIX = new Uint8Array([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);
/** How long to wait before opening a dropped event stream again. */
const RECONNECT_MS = 2000;

const b64url = (bytes) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const fromB64url = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

let key = null; // {principal, privateKey}
let events = null;

/** The account principal of the key in use, or null. */
export function principal() {
  return key?.principal ?? null;
}

/**
 * The key this browser remembers (`{principal, privateKey}`), or null. A seed an earlier console
 * kept in localStorage is imported non-extractable and removed from there.
 */
export async function savedKey() {
  const legacy = takeLegacyKeyFile();
  if (legacy) return importKeyFile(legacy);
  return loadStoredKey();
}

/**
 * A new account key made in this browser, non-extractable: it signs here and cannot be read out
 * (the CLI makes its own with `mcpx keys new`; a key file pasted in works as well).
 */
export async function newKey() {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  const entry = { principal: b64url(raw), privateKey: pair.privateKey };
  await storeKey(entry);
  return entry;
}

/** Imports a key file (`{principal, seed}`, as `mcpx keys new` writes it) non-extractable, and keeps only that. */
export async function importKeyFile(file) {
  if (typeof file?.principal !== 'string' || typeof file?.seed !== 'string')
    throw new Error('not an mcpx key file (needs principal and seed)');
  const pkcs8 = new Uint8Array([...PKCS8_PREFIX, ...fromB64url(file.seed)]);
  const privateKey = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign']);
  const entry = { principal: file.principal, privateKey };
  await storeKey(entry);
  return entry;
}

/** Signs with this key (`{principal, privateKey}`) from now on. */
export function useKey(entry) {
  key = { principal: entry.principal, privateKey: entry.privateKey };
}

export async function forgetKey() {
  await clearStoredKey();
  key = null;
}

async function envelope(action) {
  const nonce = b64url(crypto.getRandomValues(new Uint8Array(16)));
  const unsigned = { signer: key.principal, account: key.principal, ts: Date.now(), nonce, action, sig: '' };
  const sig = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, key.privateKey, encodeCanonical(unsigned)));
  return { ...unsigned, sig: b64url(sig) };
}

/** An action's typed error: `code`, `message` (naming the field) and `details`. */
export class ActionError extends Error {
  constructor(e) {
    super(`${e.code}: ${e.message}`);
    this.code = e.code;
    this.details = e.details ?? {};
  }
}

/**
 * Signs and sends one action; returns its result or throws an {@link ActionError}. The request
 * and response of each type are those of the contracts' action map (`ACTION_MAP`), published as
 * the OpenAPI document at `/v1/openapi.json`; the type checker holds every call to them.
 * @type {import('./action-types.js').Act}
 */
export async function act(type, fields) {
  if (!key) throw new Error('create or load a key first');
  for (let attempt = 0; ; attempt++) {
    // A fresh envelope each time: its nonce is single-use.
    const res = await fetch('/v1/actions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(await envelope({ type, ...fields })),
    });
    const body = await res.json().catch(() => ({}));
    if (res.ok && !body.error) return body;
    const error = body.error ?? { code: 'internal', message: `HTTP ${res.status}` };
    // rate_limited says nothing ran and when to come back: the page waits that long (a few times,
    // a few seconds at most) rather than show the owner an error for a burst of its own lists.
    const wait = error.code === 'rate_limited' ? Number(error.details?.retryAfterMs ?? 1000) : NaN;
    if (!(wait >= 0) || attempt >= RATE_RETRIES) throw new ActionError(error);
    await new Promise((r) => setTimeout(r, Math.min(wait, RATE_RETRY_MAX_MS)));
  }
}

/**
 * Follows the account's event stream (`GET /v1/events`), calling `handlers[eventName](data)`;
 * `handlers.open` runs each time the stream is (re)connected, so a view can catch up on what it
 * missed while it was down. The signed envelope's nonce is single-use: a dropped stream is opened
 * again with a fresh one.
 */
export async function followEvents(handlers) {
  events?.close();
  if (!key) return;
  const env = await envelope({ type: 'SubscribeEvents' });
  const source = new EventSource(`/v1/events?envelope=${b64url(new TextEncoder().encode(JSON.stringify(env)))}`);
  events = source;
  for (const [name, handler] of Object.entries(handlers)) {
    if (name === 'open') source.addEventListener('open', () => handler());
    else source.addEventListener(name, (e) => handler(JSON.parse(e.data)));
  }
  source.onerror = () => {
    source.close();
    if (events === source) setTimeout(() => void followEvents(handlers), RECONNECT_MS);
  };
}
