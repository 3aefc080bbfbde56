import * as dagCbor from '@ipld/dag-cbor';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import { sha256 } from './sha256.js';

/** Multicodec code of sha2-256. */
const SHA2_256 = 0x12;

/**
 * The canonical (dag-cbor) encoding: map keys sorted, shortest integer forms, so equal values
 * encode to equal bytes whatever their key order. Throws on `undefined`, NaN and Infinity.
 */
export function encodeCanonical(value: unknown): Uint8Array {
  return dagCbor.encode(value);
}

/**
 * The CID of a document: CIDv1, dag-cbor codec (0x71), sha2-256, base32 (`bafyrei…`). It is the
 * document's version: any change of a field is a new CID, key order is not.
 */
export function documentCid(doc: unknown): string {
  const bytes = encodeCanonical(doc);
  return CID.createV1(dagCbor.code, Digest.create(SHA2_256, sha256(bytes))).toString();
}
