import { ErrorCodes, WireError, invalidInput } from './errors.js';
import { BOUND_PATH_KEYS, StrictRules, type StrictLimits, type StrictRule } from './strict-cbor.js';

/**
 * Holds a parsed JSON value to the depth and item bounds of the strict CBOR decoder, so a JSON
 * body is bounded exactly as a CBOR one is before anything walks it recursively (the signature's
 * canonical encoding, the validators), and refuses the key `__proto__` as the decoder does. Past a
 * bound, `details.limit` is the bound and `details.path` the object keys (at most two) leading to
 * where it was crossed, as the decoder says them. Iterative; stops at the first item past a bound,
 * so its work is at most `maxItems` steps whatever the value (a value with shared or cyclic
 * references, which JSON cannot make but a caller in-process could, counts each visit).
 */
export function checkValueBounds(
  value: unknown,
  field: string,
  limits: Pick<StrictLimits, 'maxDepth' | 'maxItems'>,
): void {
  // `path`: the keys of the objects from the top the item lies under, while each level is an object.
  const stack: Array<{ v: unknown; depth: number; path: string[] }> = [{ v: value, depth: 0, path: [] }];
  let items = 0;
  const over = (rule: StrictRule, message: string, limit: number, path: string[]) =>
    invalidInput(field, message, { rule, limit, path });
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (++items > limits.maxItems)
      throw over(StrictRules.items, `more than ${limits.maxItems} items`, limits.maxItems, path);
    // Scalars and byte strings are one item each.
    if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v)) continue;
    if (depth + 1 > limits.maxDepth)
      throw over(StrictRules.depth, `nested deeper than ${limits.maxDepth} levels`, limits.maxDepth, path);
    if (Array.isArray(v)) {
      for (const e of v as unknown[]) stack.push({ v: e, depth: depth + 1, path });
    } else {
      const named = path.length === depth && depth < BOUND_PATH_KEYS;
      for (const k of Object.keys(v)) {
        // As in CBOR: an object must not carry it (assigned anywhere, it sets a prototype; decoded, it is renamed).
        if (k === '__proto__')
          throw invalidInput(field, 'the key "__proto__" is refused', { rule: StrictRules.mapKey });
        const under = named ? [...path, k] : path;
        // A key is an item too (as in CBOR), so a map of many empty keys is bounded the same.
        if (++items > limits.maxItems)
          throw over(StrictRules.items, `more than ${limits.maxItems} items`, limits.maxItems, under);
        stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1, path: under });
      }
    }
  }
}

/**
 * A depth or item bound crossed inside a field names that field: the key at `at` of the error's
 * `details.path` (0 for a call request's `arguments`, 1 for an action body's
 * `{action: {arguments}}`), with the rule and the bound (`details.limit`), as every other check
 * of that field names it. Any other error is returned as it is.
 */
export function boundInField(err: unknown, at: number): unknown {
  if (!(err instanceof WireError) || err.code !== ErrorCodes.invalidInput) return err;
  const { path, rule, limit } = err.details as { path?: unknown; rule?: unknown; limit?: unknown };
  const field = Array.isArray(path) ? (path as unknown[])[at] : undefined;
  if (typeof field !== 'string' || typeof limit !== 'number') return err;
  const says = rule === StrictRules.depth ? `nested deeper than ${limit} levels` : `more than ${limit} items`;
  return invalidInput(field, says, { rule, limit });
}
