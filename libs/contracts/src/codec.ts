import { Decoder, Encoder, type Options } from 'cbor-x';
import { toDagCborCompatible } from './dag-cbor-compat.js';
import { ErrorCodes, WireError } from './errors.js';
import { PAYLOAD_LIMITS, StrictRules, scanStrictCbor, type StrictLimits } from './strict-cbor.js';

/**
 * The wire codec of every NATS payload: CBOR through cbor-x, plain maps as objects, no record
 * extension (so any CBOR decoder reads what we write).
 */
const encoder = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false });
// An 8-byte integer head (another runtime's encoder writes one for 2^32 and up) reads as a number:
// the strict scan admits only integers within ±(2^53 − 1), so it is exact (a BigInt would not
// serialize to JSON, nor pass a field's number check). cbor-x reads the option but does not type
// it; a test sends such a head through the proxy.
const decoder = new Decoder({ useRecords: false, mapsAsObjects: true, int64AsNumber: true } as Options);

/**
 * Encodes a payload. A property set to `undefined` is left out, an `undefined` array element is
 * written as null (as JSON does) and a lone surrogate as U+FFFD, so what we write passes
 * {@link decodeStrict}.
 */
export function encodePayload(value: unknown): Uint8Array {
  return toDagCborCompatible(encoder.encode(value));
}

/**
 * Decodes bytes this system wrote itself and kept (database columns); throws a plain Error on
 * bytes that are not CBOR. Anything that arrives from outside (a NATS message, an HTTP body)
 * goes through {@link decodeStrict} instead.
 */
export function decodePayload<T>(bytes: Uint8Array): T {
  if (bytes.length === 0) throw new Error('empty payload');
  return encoder.decode(bytes) as T;
}

/**
 * Decodes untrusted bytes: first the O(n) strict scan (DAG-CBOR rules and `limits`, see
 * `scanStrictCbor`), then cbor-x, so no input can make decoding crash, recurse past `maxDepth`,
 * allocate past the bytes or expand. Throws only `invalid_input` naming `field` (the payload's
 * name, or `body`), `details.rule` saying which rule was broken. The value is unchecked: the
 * caller checks its shape.
 */
export function decodeStrict<T = unknown>(bytes: Uint8Array, field: string, limits: StrictLimits = PAYLOAD_LIMITS): T {
  scanStrictCbor(bytes, field, limits);
  try {
    return decoder.decode(bytes) as T;
  } catch {
    // The scan admits only what cbor-x reads; this is a guard, not an expected path.
    throw new WireError(ErrorCodes.invalidInput, `${field}: not a CBOR message`, { field, rule: StrictRules.notCbor });
  }
}
