/** Canonical DAG-CBOR encoding of a JSON-like value (see cbor.js). */
export function encodeCanonical(value: unknown): Uint8Array<ArrayBuffer>;
