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
  let budget = maxBytes;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
        // Each UTF-16 unit is at least one byte, so a long string fails before being scanned.
        budget -= v.length + 2 > budget ? v.length + 2 : jsonStringBytes(v);
        break;
      case 'number':
        budget -= Number.isFinite(v) ? String(v).length : 4;
        break;
      case 'bigint':
        budget -= String(v).length;
        break;
      case 'boolean':
        budget -= v ? 4 : 5;
        break;
      case 'object':
        if (v === null) budget -= 4;
        else if (Array.isArray(v)) {
          budget -= 2 + Math.max(0, v.length - 1);
          if (budget < 0) return undefined;
          for (let i = v.length - 1; i >= 0; i--) stack.push(v[i] === undefined ? null : v[i]);
        } else {
          budget -= 1;
          let first = true;
          for (const key of Object.keys(v)) {
            const item = (v as Record<string, unknown>)[key];
            if (item === undefined) continue;
            // The key, its colon, and a comma or the closing brace.
            budget -= jsonStringBytes(key) + 2;
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
