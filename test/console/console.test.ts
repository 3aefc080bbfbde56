import * as dagCbor from '@ipld/dag-cbor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateKeyPair, signAction, signingBytes } from '@mcpx/envelope';
// The console's own encoder, loaded as the browser loads it.
import { encodeCanonical } from '../../console/public/cbor.js';

const jsonValue = fc.jsonValue({ maxDepth: 4 }).filter((v) => JSON.stringify(v) !== undefined);

describe('the console signs the same bytes as the CLI', () => {
  it('encodes JSON values exactly as @ipld/dag-cbor does', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const normalized = JSON.parse(JSON.stringify(value)) as unknown;
        expect(Buffer.from(encodeCanonical(normalized))).toEqual(Buffer.from(dagCbor.encode(normalized)));
      }),
      { numRuns: 300 },
    );
  });

  it('produces the signing bytes of a real envelope', () => {
    const key = generateKeyPair();
    const env = signAction(key, key.principal, {
      type: 'SetMcpServer',
      name: 'gh',
      config: { url: 'https://x.example/mcp', headers: { 'X-A': '1' } },
    });
    expect(Buffer.from(encodeCanonical({ ...env, sig: '' }))).toEqual(Buffer.from(signingBytes(env)));
  });
});
