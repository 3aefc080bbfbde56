import { jsonStringBytes } from './schema.js';

/**
 * Whether the canonical JSON (JSON.stringify, no whitespace) of `value` is longer than `maxBytes`
 * of UTF-8. It walks iteratively and stops as soon as the budget is spent, so a deep or huge value
 * costs at most about `maxBytes` steps and never overflows the stack.
 */
export function jsonSizeExceeds(value: unknown, maxBytes: number): boolean {
  return jsonSizeWithin(value, maxBytes) === undefined;
}

/**
 * The UTF-8 length of `value`'s canonical JSON when it is at most `maxBytes`, else undefined;
 * the same bounded walk as {@link jsonSizeExceeds}.
 */
export function jsonSizeWithin(value: unknown, maxBytes: number): number | undefined {
  return measure(value, maxBytes, 0, 0);
}

/**
 * A size that neither `value`'s JSON nor its CBOR (the bus's codec) exceeds, when it is at most
 * `maxBytes`, else undefined. CBOR can be the longer: a string's or a container's head takes up to
 * 5 bytes where JSON's quotes or brackets take 2, and a number up to 9 bytes (`0.1` is 3 in JSON).
 */
export function wireSizeWithin(value: unknown, maxBytes: number): number | undefined {
  return measure(value, maxBytes, 3, 9);
}

/** The bounded walk: JSON's length, plus `slack` per string, key and container, numbers at least `numberMin`. */
function measure(value: unknown, maxBytes: number, slack: number, numberMin: number): number | undefined {
  let budget = maxBytes;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
        // Each UTF-16 unit is at least one byte, so a long string fails before being scanned.
        budget -= slack + (v.length + 2 > budget ? v.length + 2 : jsonStringBytes(v));
        break;
      case 'number':
        budget -= Math.max(numberMin, Number.isFinite(v) ? String(v).length : 4);
        break;
      case 'bigint':
        budget -= Math.max(numberMin, String(v).length);
        break;
      case 'boolean':
        budget -= v ? 4 : 5;
        break;
      case 'object':
        if (v === null) budget -= 4;
        else if (Array.isArray(v)) {
          budget -= slack + 2 + Math.max(0, v.length - 1);
          if (budget < 0) return undefined;
          for (let i = v.length - 1; i >= 0; i--) stack.push(v[i] === undefined ? null : v[i]);
        } else {
          budget -= slack + 1;
          let first = true;
          for (const key of Object.keys(v)) {
            const item = (v as Record<string, unknown>)[key];
            if (item === undefined) continue;
            // The key, its colon, and a comma or the closing brace.
            budget -= slack + jsonStringBytes(key) + 2;
            first = false;
            if (budget < 0) return undefined;
            stack.push(item);
          }
          if (first) budget -= 1;
        }
        break;
      case 'undefined':
      case 'function':
      case 'symbol':
        // No JSON form: JSON.stringify drops these members.
        break;
    }
    if (budget < 0) return undefined;
  }
  return maxBytes - budget;
}

/** Values nested deeper than this have no key (they compare unequal to everything). */
export const JSON_KEY_MAX_DEPTH = 64;

/**
 * A string that is equal for JSON-equal values (object keys sorted, 1 and 1.0 alike, undefined
 * members dropped), or undefined for values with no JSON form. It charges one unit of `budget`
 * per node and returns undefined when the budget runs out or the value nests deeper than
 * {@link JSON_KEY_MAX_DEPTH}, so comparing cannot run away.
 */
export function jsonKey(value: unknown, budget: { nodes: number }, depth = 0): string | undefined {
  if (--budget.nodes < 0 || depth > JSON_KEY_MAX_DEPTH) return undefined;
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value === 0 ? 0 : value) : undefined;
    case 'bigint':
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        const parts: string[] = [];
        for (const item of value) {
          const key = item === undefined ? 'null' : jsonKey(item, budget, depth + 1);
          if (key === undefined) return undefined;
          parts.push(key);
        }
        return `[${parts.join(',')}]`;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return undefined;
      const parts: string[] = [];
      for (const k of Object.keys(value).sort()) {
        const item = (value as Record<string, unknown>)[k];
        if (item === undefined) continue;
        const key = jsonKey(item, budget, depth + 1);
        if (key === undefined) return undefined;
        parts.push(`${JSON.stringify(k)}:${key}`);
      }
      return `{${parts.join(',')}}`;
    }
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
}
