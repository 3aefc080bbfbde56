// Evaluates a value against a compiled schema graph, bounded in work, depth and issues.
import { codePointLength } from './utf8.js';
import { jsonKey } from './json-measure.js';
import { ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING, type Node } from './validator-node.js';
import type { ValidationIssue, ValidationLimits } from './validator-types.js';

/**
 * Nodes with in-place keywords (`$ref`, `allOf`, …) open on one path at most. With the value's
 * depth bound it keeps the evaluator's recursion far from the stack's end whatever the schema.
 */
export const MAX_EVALUATION_DEPTH = 256;

interface Ctx {
  /** The result. Refusals (limit, depth, $ref) always land here. */
  out: ValidationIssue[];
  /** Where mismatches go now: `out`, or the throwaway list of an `anyOf`/`oneOf`/`not` trial. */
  sink: ValidationIssue[];
  /** The sink's capacity: a trial needs only its first mismatch. */
  cap: number;
  /** Trials open: a refusal inside one makes its verdict unknown, so it stops everything. */
  trials: number;
  aborted: boolean;
  /** Work units spent (see `ValidationLimits.maxNodes`). */
  work: number;
  refs: number;
  /** `$ref`s followed since the value last moved. */
  refDepth: number;
  /** Nodes being evaluated, outermost first; from `base` on, they are all at the current value. */
  chain: Node[];
  base: number;
  path: (string | number)[];
  limits: ValidationLimits;
}

/** What one evaluation spent: how tests prove a hostile schema was stopped by the counters. */
export interface EvaluationStats {
  work: number;
  refs: number;
}

/** Issues of `value` against `root` (empty when it matches); `stats`, when given, receives the work spent. */
export function evaluate(root: Node, value: unknown, limits: ValidationLimits, stats?: EvaluationStats): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const ctx: Ctx = {
    out,
    sink: out,
    cap: limits.maxIssues,
    trials: 0,
    aborted: false,
    work: 0,
    refs: 0,
    refDepth: 0,
    chain: [],
    base: 0,
    path: [],
    limits,
  };
  visit(root, value, ctx);
  if (stats !== undefined) [stats.work, stats.refs] = [ctx.work, ctx.refs];
  return out;
}

function halted(ctx: Ctx): boolean {
  return ctx.aborted || ctx.sink.length >= ctx.cap;
}

function mismatch(ctx: Ctx, keyword: string, message: string): void {
  if (halted(ctx)) return;
  ctx.sink.push({ path: pointer(ctx.path), keyword, message });
}

/** The value cannot be judged (a bound was hit): not a mismatch, so a trial cannot turn it into a pass. */
function refuse(ctx: Ctx, keyword: string, message: string, stop = false, fault?: 'schema'): void {
  if (ctx.aborted) return;
  if (ctx.out.length < ctx.limits.maxIssues) {
    ctx.out.push(fault === undefined ? { path: pointer(ctx.path), keyword, message } : { path: pointer(ctx.path), keyword, message, fault });
  }
  if (stop || ctx.trials > 0 || ctx.out.length >= ctx.limits.maxIssues) ctx.aborted = true;
}

/** The schema cannot be evaluated here (see `ValidationIssue.fault`). */
function schemaFault(ctx: Ctx, keyword: string, message: string): void {
  refuse(ctx, keyword, message, false, 'schema');
}

/** Spends `units` of work; false (and the validation refused) once the budget is gone. */
function charge(ctx: Ctx, units: number): boolean {
  ctx.work += units;
  if (ctx.work <= ctx.limits.maxNodes) return true;
  refuse(ctx, 'limit', `arguments are too complex to validate (more than ${ctx.limits.maxNodes} nodes)`, true);
  return false;
}

function visit(node: Node, value: unknown, ctx: Ctx): void {
  if (!node.checks || halted(ctx)) return;
  if (++ctx.work > ctx.limits.maxNodes) return refuse(ctx, 'limit', `arguments are too complex to validate (more than ${ctx.limits.maxNodes} nodes)`, true);
  if (ctx.path.length > ctx.limits.maxDepth) return refuse(ctx, 'depth', `arguments nest deeper than ${ctx.limits.maxDepth} levels`);
  if (!node.inPlace) return check(node, value, ctx);
  // Only nodes with in-place keywords can close a cycle, so only they are tracked.
  if (ctx.chain.indexOf(node, ctx.base) !== -1) {
    return schemaFault(ctx, '$ref', 'the schema refers back to itself here without consuming input (a $ref cycle)');
  }
  if (ctx.chain.length >= MAX_EVALUATION_DEPTH) return schemaFault(ctx, 'depth', `the schema nests deeper than ${MAX_EVALUATION_DEPTH} levels here`);
  ctx.chain.push(node);
  check(node, value, ctx);
  ctx.chain.pop();
}

function check(node: Node, value: unknown, ctx: Ctx): void {
  if (node.never) return mismatch(ctx, 'false', 'no value is allowed here');
  const bits = typeBits(value);
  if (node.types !== 0 && (bits & node.types) === 0) {
    return mismatch(ctx, 'type', `must be ${node.typeText}, got ${describeType(value, bits)}`);
  }
  if (node.enumPrimitives !== undefined && !enumHas(node, value, ctx)) {
    mismatch(ctx, node.enumKeyword, node.enumKeyword === 'const' ? `must be equal to ${node.enumText}` : `must be one of ${node.enumText}`);
  }
  if (bits & STRING) checkString(node, value as string, ctx);
  else if (bits & NUMBER) checkNumber(node, Number(value), ctx);
  else if (bits & ARRAY) checkArray(node, value as unknown[], ctx);
  else if (bits & OBJECT) checkObject(node, value as Record<string, unknown>, ctx);
  if (node.inPlace) applicators(node, value, ctx);
}

/** Evaluates `node` at a member or item of the current value. */
function descend(node: Node, value: unknown, key: string | number, ctx: Ctx): void {
  if (!node.checks) return;
  const base = ctx.base;
  const refDepth = ctx.refDepth;
  ctx.base = ctx.chain.length;
  ctx.refDepth = 0;
  ctx.path.push(key);
  visit(node, value, ctx);
  ctx.path.pop();
  ctx.base = base;
  ctx.refDepth = refDepth;
}

function applicators(node: Node, value: unknown, ctx: Ctx): void {
  if (node.ref !== undefined && !halted(ctx)) {
    if (++ctx.refs > ctx.limits.maxRefs) {
      return refuse(ctx, 'limit', `the schema's $refs were followed more than ${ctx.limits.maxRefs} times`, true);
    }
    if (ctx.refDepth >= ctx.limits.maxRefDepth) {
      return schemaFault(ctx, '$ref', `more than ${ctx.limits.maxRefDepth} $refs in a row here (${shorten(node.refText ?? '')})`);
    }
    ctx.refDepth++;
    visit(node.ref, value, ctx);
    ctx.refDepth--;
  }
  for (const sub of node.allOf ?? []) {
    if (halted(ctx)) return;
    visit(sub, value, ctx);
  }
  if (node.anyOf !== undefined && !halted(ctx)) {
    let first: ValidationIssue | undefined;
    for (const sub of node.anyOf) {
      const miss = trial(sub, value, ctx);
      if (ctx.aborted) return;
      if (miss === undefined) {
        first = undefined;
        break;
      }
      first ??= miss;
    }
    if (first !== undefined) mismatch(ctx, 'anyOf', `must match at least one of the ${node.anyOf.length} schemas in anyOf (the first fails: ${describe(first)})`);
  }
  if (node.oneOf !== undefined && !halted(ctx)) oneOf(node.oneOf, value, ctx);
  if (node.not !== undefined && !halted(ctx)) {
    const miss = trial(node.not, value, ctx);
    if (!ctx.aborted && miss === undefined) mismatch(ctx, 'not', 'must not match the schema in not');
  }
}

function oneOf(branches: readonly Node[], value: unknown, ctx: Ctx): void {
  const matched: number[] = [];
  let first: ValidationIssue | undefined;
  for (let i = 0; i < branches.length && matched.length < 2; i++) {
    const miss = trial(branches[i]!, value, ctx);
    if (ctx.aborted) return;
    if (miss === undefined) matched.push(i);
    else first ??= miss;
  }
  const n = branches.length;
  if (matched.length === 0) mismatch(ctx, 'oneOf', `must match exactly one of the ${n} schemas in oneOf, and matches none (the first fails: ${describe(first)})`);
  else if (matched.length > 1) mismatch(ctx, 'oneOf', `must match exactly one of the ${n} schemas in oneOf, and matches schemas ${matched[0]} and ${matched[1]}`);
}

/** Evaluates `node` on the side: its first mismatch, or undefined when the value matches. */
function trial(node: Node, value: unknown, ctx: Ctx): ValidationIssue | undefined {
  if (!node.checks) return undefined;
  const [sink, cap] = [ctx.sink, ctx.cap];
  const mine: ValidationIssue[] = [];
  [ctx.sink, ctx.cap] = [mine, 1];
  ctx.trials++;
  visit(node, value, ctx);
  ctx.trials--;
  [ctx.sink, ctx.cap] = [sink, cap];
  return mine[0];
}

function describe(issue: ValidationIssue | undefined): string {
  if (issue === undefined) return '?';
  return `${issue.path || '/'} ${shorten(issue.message)}`;
}

function shorten(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function enumHas(node: Node, value: unknown, ctx: Ctx): boolean {
  if (typeof value !== 'object' || value === null) {
    if (node.enumPrimitives!.has(value)) return true;
    return typeof value === 'bigint' && node.enumPrimitives!.has(Number(value));
  }
  if (node.enumKeys === undefined) return false;
  const budget = { nodes: Math.max(0, ctx.limits.maxNodes - ctx.work) };
  const key = jsonKey(value, budget);
  ctx.work = ctx.limits.maxNodes - Math.max(0, budget.nodes);
  if (key === undefined && budget.nodes < 0) {
    // Out of budget is not a mismatch: say so instead of claiming the value is not in the enum.
    charge(ctx, 1);
    return true;
  }
  return key !== undefined && node.enumKeys.has(key);
}

function checkString(node: Node, s: string, ctx: Ctx): void {
  // Code points lie between length/2 and length, so most checks need no counting.
  if (node.minLength !== undefined && s.length < node.minLength * 2 && (s.length < node.minLength || measured(s, ctx) < node.minLength)) {
    mismatch(ctx, 'minLength', `must be at least ${node.minLength} characters`);
  }
  if (node.maxLength !== undefined && s.length > node.maxLength && (s.length > node.maxLength * 2 || measured(s, ctx) > node.maxLength)) {
    mismatch(ctx, 'maxLength', `must be at most ${node.maxLength} characters`);
  }
}

/** Code points of `s`, charged one unit per KiB (a branchy schema may measure one string often). */
function measured(s: string, ctx: Ctx): number {
  if (!charge(ctx, s.length >> 10)) return Number.NaN;
  return codePointLength(s);
}

function checkNumber(node: Node, n: number, ctx: Ctx): void {
  if (node.minimum !== undefined && n < node.minimum) mismatch(ctx, 'minimum', `must be >= ${node.minimum}`);
  if (node.maximum !== undefined && n > node.maximum) mismatch(ctx, 'maximum', `must be <= ${node.maximum}`);
  if (node.exclusiveMinimum !== undefined && n <= node.exclusiveMinimum) mismatch(ctx, 'exclusiveMinimum', `must be > ${node.exclusiveMinimum}`);
  if (node.exclusiveMaximum !== undefined && n >= node.exclusiveMaximum) mismatch(ctx, 'exclusiveMaximum', `must be < ${node.exclusiveMaximum}`);
}

function checkArray(node: Node, a: unknown[], ctx: Ctx): void {
  if (node.minItems !== undefined && a.length < node.minItems) mismatch(ctx, 'minItems', `must have at least ${node.minItems} items`);
  if (node.maxItems !== undefined && a.length > node.maxItems) mismatch(ctx, 'maxItems', `must have at most ${node.maxItems} items`);
  const prefix = node.prefixItems ?? [];
  const end = node.items === undefined ? Math.min(prefix.length, a.length) : a.length;
  for (let i = 0; i < end && !halted(ctx); i++) {
    // A hole or undefined is what JSON calls null.
    descend(prefix[i] ?? node.items!, a[i] === undefined ? null : a[i], i, ctx);
  }
}

function checkObject(node: Node, o: Record<string, unknown>, ctx: Ctx): void {
  if (node.required !== undefined) {
    if (!charge(ctx, node.required.length >> 5)) return;
    for (const key of node.required) {
      if (halted(ctx)) return;
      if (!present(o, key)) missing(ctx, key, 'required', 'is required');
    }
  }
  if (node.dependentRequired !== undefined) {
    if (!charge(ctx, node.dependentRequired.length >> 5)) return;
    for (const [key, names] of node.dependentRequired) {
      if (!present(o, key)) continue;
      if (!charge(ctx, names.length >> 5)) return;
      for (const name of names) {
        if (halted(ctx)) return;
        if (!present(o, name)) missing(ctx, name, 'dependentRequired', `is required when ${shorten(JSON.stringify(key), 64)} is present`);
      }
    }
  }
  if (node.properties === undefined && node.additional === undefined) return;
  const keys = Object.keys(o);
  if (!charge(ctx, keys.length >> 5)) return;
  for (const key of keys) {
    if (halted(ctx)) return;
    const item = o[key];
    if (item === undefined) continue;
    const sub = node.properties?.get(key) ?? node.additional;
    if (sub === undefined) continue;
    if (sub.never && !node.properties?.has(key)) {
      ctx.path.push(key);
      mismatch(ctx, 'additionalProperties', 'is not allowed');
      ctx.path.pop();
    } else descend(sub, item, key, ctx);
  }
}

/** An undefined member has no JSON form: it is as absent as a missing one. */
function present(o: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(o, key) && o[key] !== undefined;
}

function missing(ctx: Ctx, key: string, keyword: string, message: string): void {
  ctx.path.push(key);
  mismatch(ctx, keyword, message);
  ctx.path.pop();
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
