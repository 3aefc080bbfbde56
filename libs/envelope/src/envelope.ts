import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import * as dagCbor from '@ipld/dag-cbor';
import { BODY_LIMITS, checkValueBounds, type ActionEnvelope } from '@mcpx/contracts';

/** Allowed clock skew between a signer and the registry. */
export const ENVELOPE_MAX_SKEW_MS = 30_000;

/** The DER prefix of an ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** The DER prefix of an ed25519 PKCS#8 private key; the 32-byte seed follows it. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface KeyPair {
  /** base64url of the raw 32-byte public key: the account (or signer) id. */
  principal: string;
  /** base64url of the 32-byte private seed. */
  seed: string;
}

export function generateKeyPair(): KeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' });
  return {
    principal: spki.subarray(SPKI_PREFIX.length).toString('base64url'),
    seed: pkcs8.subarray(PKCS8_PREFIX.length).toString('base64url'),
  };
}

function privateKeyFromSeed(seed: string): KeyObject {
  const raw = Buffer.from(seed, 'base64url');
  if (raw.length !== 32) throw new Error('an ed25519 seed is 32 bytes');
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' });
}

/** Returns null when the principal is not a well-formed ed25519 public key. */
export function publicKeyFromPrincipal(principal: string): KeyObject | null {
  if (!/^[A-Za-z0-9_-]{43}$/.test(principal)) return null;
  const raw = Buffer.from(principal, 'base64url');
  if (raw.length !== 32) return null;
  try {
    return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

/**
 * The bytes that are signed: the DAG-CBOR (canonical: sorted keys, minimal integers) encoding of
 * the envelope with `sig` set to the empty string. Throws on values DAG-CBOR cannot hold, and
 * (an `invalid_input` naming `envelope`) on an envelope past the action API's depth and item
 * bounds: the walk that checks them stops at the bound, so an envelope whose objects are shared
 * many times over (a graph far bigger unfolded than in memory) cannot make the encoding run away.
 */
export function signingBytes(envelope: Omit<ActionEnvelope, 'sig'> & { sig?: string }): Uint8Array {
  const unsigned = { ...envelope, sig: '' };
  checkValueBounds(unsigned, 'envelope', BODY_LIMITS);
  return dagCbor.encode(unsigned);
}

/** Builds a signed envelope for an action, with a fresh nonce and the current time. */
export function signAction(
  key: KeyPair,
  account: string,
  action: ActionEnvelope['action'],
  now: number = Date.now(),
): ActionEnvelope {
  const unsigned = { signer: key.principal, account, ts: now, nonce: randomBytes(16).toString('base64url'), action };
  const sig = sign(null, signingBytes(unsigned), privateKeyFromSeed(key.seed)).toString('base64url');
  return { ...unsigned, sig };
}

/**
 * Checks the signature only (time, nonce and signer authority are the registry's job), over the
 * bounded canonical re-encoding of {@link signingBytes}: its work is linear in the bounds.
 */
export function verifySignature(envelope: ActionEnvelope): boolean {
  const pub = publicKeyFromPrincipal(envelope.signer);
  if (pub === null || typeof envelope.sig !== 'string') return false;
  const sig = Buffer.from(envelope.sig, 'base64url');
  if (sig.length !== 64) return false;
  let bytes: Uint8Array;
  try {
    bytes = signingBytes(envelope);
  } catch {
    return false;
  }
  return verify(null, bytes, pub, sig);
}
