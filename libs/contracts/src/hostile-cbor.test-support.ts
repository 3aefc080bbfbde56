/**
 * Test support (exported as `@mcpx/contracts/test-support`, never from the package's index):
 * hostile CBOR that the strict decoder, and every service that reads with it, must refuse.
 */

/**
 * `levels` nested shared values (tags 28/29): each level is an array holding the level below
 * twice, so a few hundred bytes unfold to 2^levels values in a decoder that honours the tags.
 */
export function sharedValueBomb(levels: number): Uint8Array {
  const parts: number[] = [];
  for (let i = 0; i < levels; i++) parts.push(0x82, 0xd8, 28);
  parts.push(0x00);
  for (let i = levels - 1; i >= 0; i--) parts.push(0xd8, 29, 0x18, i);
  return Uint8Array.from(parts);
}
