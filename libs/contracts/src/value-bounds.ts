import { invalidInput } from './errors.js';
import { StrictRules, type StrictLimits } from './strict-cbor.js';

/**
 * Holds a parsed JSON value to the depth and item bounds of the strict CBOR decoder, so a JSON
 * body is bounded exactly as a CBOR one is before anything walks it recursively (the signature's
 * canonical encoding, the validators), and refuses the key `__proto__` as the decoder does. Iterative; stops at the first item past a bound, so its
 * work is at most `maxItems` steps whatever the value (a value with shared or cyclic references,
 * which JSON cannot make but a caller in-process could, counts each visit).
 */
export function checkValueBounds(value: unknown, field: string, limits: Pick<StrictLimits, 'maxDepth' | 'maxItems'>): void {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 0 }];
  let items = 0;
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (++items > limits.maxItems) throw invalidInput(field, `more than ${limits.maxItems} items`, { rule: StrictRules.items });
    // Scalars and byte strings are one item each.
    if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v)) continue;
    if (depth + 1 > limits.maxDepth) throw invalidInput(field, `nested deeper than ${limits.maxDepth} levels`, { rule: StrictRules.depth });
    if (Array.isArray(v)) {
      for (const e of v as unknown[]) stack.push({ v: e, depth: depth + 1 });
    } else {
      for (const k of Object.keys(v)) {
        // As in CBOR: an object must not carry it (assigned anywhere, it sets a prototype; decoded, it is renamed).
        if (k === '__proto__') throw invalidInput(field, 'the key "__proto__" is refused', { rule: StrictRules.mapKey });
        // A key is an item too (as in CBOR), so a map of many empty keys is bounded the same.
        if (++items > limits.maxItems) throw invalidInput(field, `more than ${limits.maxItems} items`, { rule: StrictRules.items });
        stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1 });
      }
    }
  }
}
