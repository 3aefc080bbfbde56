import { Encoder } from 'cbor-x';

/**
 * The wire codec of every NATS payload: CBOR through cbor-x, plain maps as objects, no record
 * extension (so any CBOR decoder reads what we write).
 */
const encoder = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false });

export function encodePayload(value: unknown): Uint8Array {
  return encoder.encode(value);
}

/** Decodes a payload; throws a plain Error on bytes that are not CBOR. */
export function decodePayload<T>(bytes: Uint8Array): T {
  if (bytes.length === 0) throw new Error('empty payload');
  return encoder.decode(bytes) as T;
}
