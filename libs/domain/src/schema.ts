import type { JsonObject, JsonValue } from './types.js';
import { utf8ByteLength } from './utf8.js';

/** A schema whose canonical JSON is larger than this is not kept (remote schemas are untrusted). */
export const SCHEMA_MAX_BYTES = 256 * 1024;
/**
 * A schema nested deeper than this (levels of JSON: the root object is 1) is not kept. Far above
 * any real schema (40 levels of nested object properties are 81); it keeps every layer that
 * stores, encodes or decodes a document (strict CBOR allows 320) clear of its own depth bound.
 */
export const SCHEMA_MAX_DEPTH = 256;

/**
 * The input schema a tool document carries: the remote schema whole, minus the root's `$schema`
 * and `$id`, as plain JSON (undefined dropped, non-finite numbers as null, like JSON.stringify).
 * Nothing is dropped for its shape: the local validator checks what it models and lets the rest
 * through.
 *
 * The root must be a plain object whose `type` is `'object'` or absent (then `type: 'object'` is
 * added); any other root becomes `{type: 'object'}`. So does a schema past the bounds (canonical
 * JSON over 256 KiB of UTF-8, or nested deeper than 256): discovery does not keep such a tool
 * (see {@link schemaBoundsFault}), so this fallback only guards other callers.
 */
export function normalizeInputSchema(schema: unknown): JsonObject {
  return normalizeObjectSchema(schema) ?? { type: 'object' };
}

/** Like {@link normalizeInputSchema}, but undefined when the schema is absent or unusable. */
export function normalizeOutputSchema(schema: unknown): JsonObject | undefined {
  return normalizeObjectSchema(schema);
}

/**
 * Why `schema` (a tool's input or output schema) is past the bounds a document keeps, or
 * undefined: the one reason discovery skips a tool for its schema, named in the server's status.
 * A root that is not an object schema is no fault (it falls back to `{type: 'object'}`).
 */
export function schemaBoundsFault(schema: unknown): string | undefined {
  const bounded = boundedSchema(schema);
  if (bounded === 'bytes') return `larger than ${SCHEMA_MAX_BYTES} bytes of JSON`;
  if (bounded === 'depth') return `nested deeper than ${SCHEMA_MAX_DEPTH} levels of JSON`;
  return undefined;
}

function normalizeObjectSchema(schema: unknown): JsonObject | undefined {
  const bounded = boundedSchema(schema);
  return typeof bounded === 'object' ? bounded : undefined;
}

/** The schema as a document keeps it, or what keeps it out: its root's shape, its size or its depth. */
function boundedSchema(schema: unknown): JsonObject | 'shape' | 'bytes' | 'depth' {
  if (!isObjectLike(schema)) return 'shape';
  const type = schema.type;
  if (type !== undefined && type !== 'object') return 'shape';
  const root: Record<string, unknown> = {};
  for (const key of Object.keys(schema)) {
    if (key === '$schema' || key === '$id') continue;
    defineKey(root, key, schema[key]);
  }
  if (type === undefined) root.type = 'object';
  const budget = { bytes: SCHEMA_MAX_BYTES };
  const json = toJson(root, 1, budget);
  if (json === TOO_BIG) return budget.bytes < 0 ? 'bytes' : 'depth';
  if (json === undefined || !isObjectLike(json)) return 'shape';
  return json;
}

const TOO_BIG = Symbol('too big');

/**
 * `value` as JSON with JSON.stringify's rules, while charging its canonical JSON size to `budget`
 * so a huge or deep input stops early instead of being copied whole.
 * Returns undefined where JSON.stringify would omit the value.
 */
function toJson(value: unknown, depth: number, budget: { bytes: number }): JsonValue | undefined | typeof TOO_BIG {
  switch (typeof value) {
    case 'string':
      budget.bytes -= jsonStringBytes(value);
      return budget.bytes < 0 ? TOO_BIG : value;
    case 'number': {
      // JSON has no NaN/Infinity (dag-cbor refuses them too) and no -0.
      const n = Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
      budget.bytes -= n === null ? 4 : String(n).length;
      return budget.bytes < 0 ? TOO_BIG : n;
    }
    case 'boolean':
      budget.bytes -= value ? 4 : 5;
      return budget.bytes < 0 ? TOO_BIG : value;
    case 'object':
      break;
    case 'undefined':
    case 'function':
    case 'symbol':
    case 'bigint':
      // No JSON form in a schema (JSON.stringify drops or refuses them).
      return undefined;
  }
  if (value === null) {
    budget.bytes -= 4;
    return budget.bytes < 0 ? TOO_BIG : null;
  }
  if (depth > SCHEMA_MAX_DEPTH) return TOO_BIG;
  if (Array.isArray(value)) {
    budget.bytes -= 2 + Math.max(0, value.length - 1);
    if (budget.bytes < 0) return TOO_BIG;
    const out: JsonValue[] = [];
    for (const item of value) {
      const json = toJson(item, depth + 1, budget);
      if (json === TOO_BIG) return TOO_BIG;
      if (json === undefined) {
        budget.bytes -= 4;
        out.push(null);
      } else out.push(json);
    }
    return budget.bytes < 0 ? TOO_BIG : out;
  }
  const out: Record<string, JsonValue> = {};
  budget.bytes -= 2;
  let first = true;
  for (const key of Object.keys(value)) {
    const json = toJson((value as Record<string, unknown>)[key], depth + 1, budget);
    if (json === TOO_BIG) return TOO_BIG;
    if (json === undefined) continue;
    budget.bytes -= jsonStringBytes(key) + 1 + (first ? 0 : 1);
    first = false;
    if (budget.bytes < 0) return TOO_BIG;
    defineKey(out, key, json);
  }
  return out;
}

/** Bytes of `JSON.stringify(s)` in UTF-8, quotes and escapes included. */
export function jsonStringBytes(s: string): number {
  let bytes = 2;
  let escapes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x0c || c === 0x0a || c === 0x0d || c === 0x09) escapes += 1;
    else if (c < 0x20) escapes += 5;
    else if (c >= 0xd800 && c <= 0xdfff) {
      const paired =
        c <= 0xdbff
          ? i + 1 < s.length && isLow(s.charCodeAt(i + 1))
          : i > 0 && s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff;
      // A lone surrogate is written as a 6-character \uXXXX escape.
      if (!paired) escapes += 3;
    }
  }
  bytes += utf8ByteLength(s) + escapes;
  return bytes;
}

function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

function isObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Assign that treats `__proto__` as an ordinary key (a JSON-parsed schema may have one). */
function defineKey(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else target[key] = value;
}
