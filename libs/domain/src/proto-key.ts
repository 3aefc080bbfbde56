/**
 * Whether the key `__proto__` appears anywhere in a value (objects and arrays, at any depth). The
 * wire refuses that key everywhere (strict CBOR decoding and the JSON bounds, rule `map_key`): a
 * decoder renames it and an assignment sets a prototype, so a value carrying it could not be sent
 * on unchanged. Iterative; its work is the value's size (callers hold bounded values).
 */
export function carriesProtoKey(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (const e of v as unknown[]) stack.push(e);
      continue;
    }
    for (const k of Object.keys(v)) {
      if (k === '__proto__') return true;
      stack.push((v as Record<string, unknown>)[k]);
    }
  }
  return false;
}
