import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as dagCbor from '@ipld/dag-cbor';
import { CID } from 'multiformats/cid';
import { sha256 as multiformatsSha256 } from 'multiformats/hashes/sha2';
import { documentCid, encodeCanonical } from './cid.js';
import type { McpToolDocument } from './types.js';

const doc: McpToolDocument = {
  kind: 'mcp',
  name: 'github__create_issue',
  description: 'Open an issue.',
  inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
  permission: 'act',
  server: 'github',
  remoteName: 'create_issue',
};

async function referenceCid(value: unknown): Promise<string> {
  const bytes = dagCbor.encode(value);
  return CID.create(1, dagCbor.code, await multiformatsSha256.digest(bytes)).toString();
}

describe('documentCid', () => {
  it('matches the known CID of the empty map', () => {
    expect(documentCid({})).toBe('bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua');
  });

  it('gives the same string as dag-cbor + multiformats for any document', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
        const plain = JSON.parse(JSON.stringify(value)) as unknown;
        expect(documentCid(plain)).toBe(await referenceCid(plain));
      }),
    );
    expect(documentCid(doc)).toBe(await referenceCid(doc));
  });

  it('ignores key order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        expect(documentCid(reversed)).toBe(documentCid(obj));
      }),
    );
  });

  it('changes when any contract field changes', () => {
    const base = documentCid(doc);
    const variants: McpToolDocument[] = [
      { ...doc, name: 'github__create_issue2' },
      { ...doc, description: 'Open an issue' },
      { ...doc, inputSchema: { ...doc.inputSchema, required: [] } },
      { ...doc, permission: 'always_ask' },
      { ...doc, server: 'gh' },
      { ...doc, remoteName: 'create-issue' },
      { ...doc, title: 'Create' },
      { ...doc, outputSchema: { type: 'object' } },
      { ...doc, annotations: { readOnlyHint: false } },
    ];
    const cids = new Set([base, ...variants.map((v) => documentCid(v))]);
    expect(cids.size).toBe(variants.length + 1);
  });

  it('is a CIDv1 dag-cbor sha2-256 in base32', () => {
    const cid = CID.parse(documentCid(doc));
    expect(cid.version).toBe(1);
    expect(cid.code).toBe(0x71);
    expect(cid.multihash.code).toBe(0x12);
    expect(documentCid(doc).startsWith('bafyrei')).toBe(true);
  });

  it('refuses undefined, which a document must never hold', () => {
    expect(() => encodeCanonical({ a: undefined })).toThrow();
  });
});
