import type { JsonObject } from './types.js';
import { codePointLength } from './utf8.js';
import { jsonKey, jsonSizeExceeds } from './json-measure.js';

/** One reason a value does not match its schema. `path` is a JSON pointer into the value (`''` is the root). */
export interface ValidationIssue {
  path: string;
  message: string;
  keyword: string;
}
export type ValidationResult = { ok: true } | { ok: false; errors: ValidationIssue[] };
export type ArgumentValidator = (value: unknown) => ValidationResult;

export interface ValidationLimits {
  /** Schema levels followed into the value; a value that needs more is refused (`depth`). */
  maxDepth: number;
  /** Value nodes visited (and enum/const nodes compared); more is refused (`limit`). */
  maxNodes: number;
  /** Issues reported at most; validation stops at this many. */
  maxIssues: number;
  /** Canonical JSON bytes of the whole value; more is refused (`size`) before anything else. */
  maxBytes: number;
}

export const DEFAULT_VALIDATION_LIMITS: Readonly<ValidationLimits> = {
  maxDepth: 32,
  maxNodes: 10_000,
  maxIssues: 20,
  maxBytes: 1024 * 1024,
};

/** Schema nodes compiled at most; a bigger schema's remaining parts are left unchecked (the server still validates). */
const MAX_COMPILED_NODES = 100_000;

// Type bits. An integer value carries both INTEGER and NUMBER, so `type: 'number'` admits it.
const NULL = 1, BOOLEAN = 2, INTEGER = 4, NUMBER = 8, STRING = 16, ARRAY = 32, OBJECT = 64;
const TYPE_BITS: Readonly<Record<string, number>> = {
  null: NULL, boolean: BOOLEAN, integer: INTEGER, number: NUMBER, string: STRING, array: ARRAY, object: OBJECT,
};

/** A schema compiled to plain fields, so a call pays for keyword checks, not for schema lookups. */
interface Node {
  /** No keyword this validator models: nothing to check below. */
  trivial: boolean;
  /** The `false` schema: nothing matches. */
  never: boolean;
  /** Below the depth limit: reaching it with a value is refused. */
  tooDeep: boolean;
  types: number;
  typeText: string;
  enumPrimitives?: Set<unknown>;
  enumKeys?: Set<string>;
  enumText: string;
  enumKeyword: 'enum' | 'const';
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  items?: Node;
  properties?: Map<string, Node>;
  required?: string[];
  /** `additionalProperties`: a schema, `false` compiled as a never node, or absent. */
  additional?: Node;
}

const MODELED_KEYWORDS = [
  'type', 'enum', 'const', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'minItems', 'maxItems', 'items', 'properties', 'required', 'additionalProperties',
] as const;

const TRIVIAL: Node = { trivial: true, never: false, tooDeep: false, types: 0, typeText: '', enumText: '', enumKeyword: 'enum' };

/**
 * A reusable validator for `schema` (compile once per document, call per request). The keywords
 * modelled are type, enum, const, minLength, maxLength, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, minItems, maxItems, items (a single schema), properties, required and
 * additionalProperties; every other keyword ($ref, anyOf, pattern, format, …) is ignored, leaving
 * it to the remote server. Work is bounded by `limits`: a value past a limit is refused with a
 * `size`, `depth` or `limit` issue, so a hostile schema or value cannot make a call hang.
 */
export function compileValidator(schema: JsonObject | boolean, limits?: Partial<ValidationLimits>): ArgumentValidator {
  const lim: ValidationLimits = { ...DEFAULT_VALIDATION_LIMITS, ...limits };
  const root = compile(schema, 0, lim, { nodes: 0 });
  return (value) => {
    if (jsonSizeExceeds(value, lim.maxBytes)) {
      return { ok: false, errors: [{ path: '', keyword: 'size', message: `arguments are larger than ${lim.maxBytes} bytes of JSON` }] };
    }
    const ctx: Ctx = { issues: [], nodes: 0, stopped: false, path: [], limits: lim };
    visit(root, value, ctx);
    return ctx.issues.length === 0 ? { ok: true } : { ok: false, errors: ctx.issues };
  };
}

const cache = new WeakMap<object, ArgumentValidator>();

/**
 * Validates `value` against `schema` with {@link compileValidator}. With default limits the
 * compiled validator is cached per schema object, so keep document schemas as long-lived objects.
 */
export function validateArguments(schema: JsonObject, value: unknown, limits?: Partial<ValidationLimits>): ValidationResult {
  if (limits !== undefined) return compileValidator(schema, limits)(value);
  let validator = cache.get(schema);
  if (validator === undefined) {
    validator = compileValidator(schema);
    cache.set(schema, validator);
  }
  return validator(value);
}

function compile(schema: unknown, depth: number, lim: ValidationLimits, budget: { nodes: number }): Node {
  if (schema === false) return { ...TRIVIAL, trivial: false, never: true };
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return TRIVIAL;
  if (++budget.nodes > MAX_COMPILED_NODES) return TRIVIAL;
  const s = schema as Record<string, unknown>;
  const node: Node = { ...TRIVIAL, trivial: false };
  if (depth > lim.maxDepth) return MODELED_KEYWORDS.some((k) => s[k] !== undefined) ? { ...node, tooDeep: true } : TRIVIAL;

  const typeNames = (typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type : []).filter(
    (t): t is string => typeof t === 'string' && Object.hasOwn(TYPE_BITS, t),
  );
  for (const t of typeNames) node.types |= TYPE_BITS[t]!;
  node.typeText = typeNames.join(' or ');

  if (Object.hasOwn(s, 'const') && s.const !== undefined) compileEnum(node, [s.const], 'const', budget);
  else if (Array.isArray(s.enum)) compileEnum(node, s.enum, 'enum', budget);

  node.minLength = count(s.minLength);
  node.maxLength = count(s.maxLength);
  node.minItems = count(s.minItems);
  node.maxItems = count(s.maxItems);
  node.minimum = finite(s.minimum);
  node.maximum = finite(s.maximum);
  node.exclusiveMinimum = finite(s.exclusiveMinimum);
  node.exclusiveMaximum = finite(s.exclusiveMaximum);
  // Draft 4 spelled exclusive bounds as booleans beside minimum/maximum.
  if (s.exclusiveMinimum === true && node.minimum !== undefined) [node.exclusiveMinimum, node.minimum] = [node.minimum, undefined];
  if (s.exclusiveMaximum === true && node.maximum !== undefined) [node.exclusiveMaximum, node.maximum] = [node.maximum, undefined];

  if ((typeof s.items === 'object' && s.items !== null && !Array.isArray(s.items)) || s.items === false) {
    const items = compile(s.items, depth + 1, lim, budget);
    if (!items.trivial) node.items = items;
  }
  if (typeof s.properties === 'object' && s.properties !== null && !Array.isArray(s.properties)) {
    const properties = new Map<string, Node>();
    for (const [key, sub] of Object.entries(s.properties)) properties.set(key, compile(sub, depth + 1, lim, budget));
    node.properties = properties;
  }
  if (Array.isArray(s.required)) {
    const required = s.required.filter((k): k is string => typeof k === 'string');
    if (required.length > 0) node.required = [...new Set(required)];
  }
  // additionalProperties is relative to properties *and* patternProperties; without modelling
  // patterns it cannot be judged, so it is skipped rather than refusing valid input.
  if (s.patternProperties === undefined && (s.additionalProperties === false || typeof s.additionalProperties === 'object')) {
    const additional = compile(s.additionalProperties, depth + 1, lim, budget);
    if (!additional.trivial) node.additional = additional;
  }

  node.trivial =
    node.types === 0 && node.enumText === '' && node.minLength === undefined && node.maxLength === undefined &&
    node.minItems === undefined && node.maxItems === undefined && node.minimum === undefined &&
    node.maximum === undefined && node.exclusiveMinimum === undefined && node.exclusiveMaximum === undefined &&
    node.items === undefined && node.required === undefined && node.additional === undefined &&
    (node.properties === undefined || [...node.properties.values()].every((n) => n.trivial));
  return node.trivial ? TRIVIAL : node;
}

function compileEnum(node: Node, values: unknown[], keyword: 'enum' | 'const', budget: { nodes: number }): void {
  const primitives = new Set<unknown>();
  const keys = new Set<string>();
  for (const v of values) {
    if (v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      primitives.add(v);
    } else {
      // Compound entries are compared through their canonical key: one Set lookup per value.
      const key = jsonKey(v, { nodes: MAX_COMPILED_NODES });
      budget.nodes++;
      if (key !== undefined) keys.add(key);
    }
  }
  node.enumPrimitives = primitives;
  if (keys.size > 0) node.enumKeys = keys;
  node.enumKeyword = keyword;
  const shown = values.slice(0, 10).map((v) => jsonKey(v, { nodes: 100 }) ?? '?');
  node.enumText = shown.join(', ') + (values.length > 10 ? `, … (${values.length} values)` : '') || '(none)';
}

interface Ctx {
  issues: ValidationIssue[];
  nodes: number;
  stopped: boolean;
  path: (string | number)[];
  limits: ValidationLimits;
}

function visit(node: Node, value: unknown, ctx: Ctx): void {
  if (node.trivial || ctx.stopped) return;
  if (++ctx.nodes > ctx.limits.maxNodes) {
    report(ctx, 'limit', `arguments are too complex to validate (more than ${ctx.limits.maxNodes} nodes)`);
    ctx.stopped = true;
    return;
  }
  if (node.never) return report(ctx, 'false', 'no value is allowed here');
  if (node.tooDeep) return report(ctx, 'depth', `arguments nest deeper than ${ctx.limits.maxDepth} levels`);

  const bits = typeBits(value);
  if (node.types !== 0 && (bits & node.types) === 0) {
    return report(ctx, 'type', `must be ${node.typeText}, got ${describeType(value, bits)}`);
  }
  if (node.enumPrimitives !== undefined && !enumHas(node, value, ctx)) {
    report(ctx, node.enumKeyword, node.enumKeyword === 'const' ? `must be equal to ${node.enumText}` : `must be one of ${node.enumText}`);
  }
  if (bits & STRING) checkString(node, value as string, ctx);
  else if (bits & NUMBER) checkNumber(node, Number(value), ctx);
  else if (bits & ARRAY) checkArray(node, value as unknown[], ctx);
  else if (bits & OBJECT) checkObject(node, value as Record<string, unknown>, ctx);
}

function enumHas(node: Node, value: unknown, ctx: Ctx): boolean {
  if (typeof value !== 'object' || value === null) {
    if (node.enumPrimitives!.has(value)) return true;
    return typeof value === 'bigint' && node.enumPrimitives!.has(Number(value));
  }
  if (node.enumKeys === undefined) return false;
  const budget = { nodes: Math.max(0, ctx.limits.maxNodes - ctx.nodes) };
  const key = jsonKey(value, budget);
  ctx.nodes = ctx.limits.maxNodes - Math.max(0, budget.nodes);
  if (key === undefined && budget.nodes < 0) {
    // Out of budget is not a mismatch: say so instead of claiming the value is not in the enum.
    report(ctx, 'limit', `arguments are too complex to validate (more than ${ctx.limits.maxNodes} nodes)`);
    ctx.stopped = true;
    return true;
  }
  return key !== undefined && node.enumKeys.has(key);
}

function checkString(node: Node, s: string, ctx: Ctx): void {
  // Code points lie between length/2 and length, so most checks need no counting.
  if (node.minLength !== undefined && s.length < node.minLength * 2 && (s.length < node.minLength || codePointLength(s) < node.minLength)) {
    report(ctx, 'minLength', `must be at least ${node.minLength} characters`);
  }
  if (node.maxLength !== undefined && s.length > node.maxLength && (s.length > node.maxLength * 2 || codePointLength(s) > node.maxLength)) {
    report(ctx, 'maxLength', `must be at most ${node.maxLength} characters`);
  }
}

function checkNumber(node: Node, n: number, ctx: Ctx): void {
  if (node.minimum !== undefined && n < node.minimum) report(ctx, 'minimum', `must be >= ${node.minimum}`);
  if (node.maximum !== undefined && n > node.maximum) report(ctx, 'maximum', `must be <= ${node.maximum}`);
  if (node.exclusiveMinimum !== undefined && n <= node.exclusiveMinimum) report(ctx, 'exclusiveMinimum', `must be > ${node.exclusiveMinimum}`);
  if (node.exclusiveMaximum !== undefined && n >= node.exclusiveMaximum) report(ctx, 'exclusiveMaximum', `must be < ${node.exclusiveMaximum}`);
}

function checkArray(node: Node, a: unknown[], ctx: Ctx): void {
  if (node.minItems !== undefined && a.length < node.minItems) report(ctx, 'minItems', `must have at least ${node.minItems} items`);
  if (node.maxItems !== undefined && a.length > node.maxItems) report(ctx, 'maxItems', `must have at most ${node.maxItems} items`);
  const items = node.items;
  if (items === undefined) return;
  for (let i = 0; i < a.length && !ctx.stopped; i++) {
    ctx.path.push(i);
    // A hole or undefined is what JSON calls null.
    visit(items, a[i] === undefined ? null : a[i], ctx);
    ctx.path.pop();
  }
}

function checkObject(node: Node, o: Record<string, unknown>, ctx: Ctx): void {
  if (node.required !== undefined) {
    for (const key of node.required) {
      if (ctx.stopped) return;
      // An undefined member has no JSON form: it is as absent as a missing one.
      if (!Object.hasOwn(o, key) || o[key] === undefined) {
        ctx.path.push(key);
        report(ctx, 'required', 'is required');
        ctx.path.pop();
      }
    }
  }
  if (node.properties === undefined && node.additional === undefined) return;
  for (const key of Object.keys(o)) {
    if (ctx.stopped) return;
    const item = o[key];
    if (item === undefined) continue;
    const sub = node.properties?.get(key) ?? node.additional;
    if (sub === undefined) continue;
    ctx.path.push(key);
    if (sub.never && !node.properties?.has(key)) report(ctx, 'additionalProperties', 'is not allowed');
    else visit(sub, item, ctx);
    ctx.path.pop();
  }
}

function report(ctx: Ctx, keyword: string, message: string): void {
  if (ctx.stopped) return;
  ctx.issues.push({ path: pointer(ctx.path), keyword, message });
  if (ctx.issues.length >= ctx.limits.maxIssues) ctx.stopped = true;
}

/** RFC 6901 JSON pointer. */
function pointer(path: readonly (string | number)[]): string {
  let out = '';
  for (const part of path) out += `/${String(part).replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return out;
}

function typeBits(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return STRING;
    case 'number':
      if (!Number.isFinite(value)) return 0;
      return Number.isInteger(value) ? INTEGER | NUMBER : NUMBER;
    case 'bigint':
      return INTEGER | NUMBER;
    case 'boolean':
      return BOOLEAN;
    case 'object': {
      if (value === null) return NULL;
      if (Array.isArray(value)) return ARRAY;
      const proto: unknown = Object.getPrototypeOf(value);
      return proto === Object.prototype || proto === null ? OBJECT : 0;
    }
    case 'undefined':
    case 'function':
    case 'symbol':
      return 0;
  }
}

function describeType(value: unknown, bits: number): string {
  if (bits & STRING) return 'string';
  if (bits & INTEGER) return 'integer';
  if (bits & NUMBER) return 'number';
  if (bits & BOOLEAN) return 'boolean';
  if (bits & NULL) return 'null';
  if (bits & ARRAY) return 'array';
  if (bits & OBJECT) return 'object';
  return value === undefined ? 'nothing' : 'a value that is not JSON';
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

function finite(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
