import { invalidInput } from './errors.js';
import { StrictRules, type StrictLimits, type StrictRule } from './strict-cbor.js';

/**
 * Holds a parsed JSON value to the depth and item bounds of the strict CBOR decoder, so a JSON
 * body is bounded exactly as a CBOR one is before anything walks it recursively (the signature's
 * canonical encoding, the validators), and refuses the key `__proto__` as the decoder does. Past a
 * bound, `details.limit` is the bound and `details.key` the top-level key it was crossed under.
 * Iterative; stops at the first item past a bound, so its work is at most `maxItems` steps
 * whatever the value (a value with shared or cyclic references, which JSON cannot make but a
 * caller in-process could, counts each visit).
 */
export function checkValueBounds(value: unknown, field: string, limits: Pick<StrictLimits, 'maxDepth' | 'maxItems'>): void {
  // `key`: the top-level object's key the item lies under, named (`details.key`) when a bound is crossed there.
  const stack: Array<{ v: unknown; depth: number; key: string | undefined }> = [{ v: value, depth: 0, key: undefined }];
  let items = 0;
  const over = (rule: StrictRule, message: string, limit: number, key: string | undefined) => invalidInput(field, message, { rule, limit, ...(key !== undefined ? { key } : {}) });
  while (stack.length > 0) {
    const { v, depth, key } = stack.pop()!;
    if (++items > limits.maxItems) throw over(StrictRules.items, `more than ${limits.maxItems} items`, limits.maxItems, key);
    // Scalars and byte strings are one item each.
    if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v)) continue;
    if (depth + 1 > limits.maxDepth) throw over(StrictRules.depth, `nested deeper than ${limits.maxDepth} levels`, limits.maxDepth, key);
    if (Array.isArray(v)) {
      for (const e of v as unknown[]) stack.push({ v: e, depth: depth + 1, key });
    } else {
      for (const k of Object.keys(v)) {
        // As in CBOR: an object must not carry it (assigned anywhere, it sets a prototype; decoded, it is renamed).
        if (k === '__proto__') throw invalidInput(field, 'the key "__proto__" is refused', { rule: StrictRules.mapKey });
        // A key is an item too (as in CBOR), so a map of many empty keys is bounded the same.
        if (++items > limits.maxItems) throw over(StrictRules.items, `more than ${limits.maxItems} items`, limits.maxItems, depth === 0 ? k : key);
        stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1, key: depth === 0 ? k : key });
      }
    }
  }
}
