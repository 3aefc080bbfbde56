// Evaluates a value against a compiled schema graph, bounded in work, depth and issues.
import { codePointLength } from './utf8.js';
import { jsonKey } from './json-measure.js';
import { ARRAY, NUMBER, OBJECT, STRING, TRIVIAL, describeType, typeBits, type Node } from './validator-node.js';
import type { ValidationIssue, ValidationLimits } from './validator-types.js';
import { Fills } from './validator-defaults.js';
import { charge, describe, halted, mismatch, missing, present, shorten, unchecked, type Ctx } from './validator-ctx.js';

/**
 * Nodes with in-place keywords (`$ref`, `allOf`, …) open on one path at most. With the value's
 * depth bound it keeps the evaluator's recursion far from the stack's end whatever the schema.
 */
export const MAX_EVALUATION_DEPTH = 256;

/** What one evaluation spent: how tests prove a hostile schema was stopped by the counters. */
export interface EvaluationStats {
  work: number;
  refs: number;
}

/** What one evaluation found: mismatches, why a part was left unchecked, and the defaults filled. */
export interface Evaluation {
  issues: ValidationIssue[];
  partial?: string;
  fills?: Fills;
}

/** Issues of `value` against `root` (empty when it matches); `stats`, when given, receives the work spent. */
export function evaluate(
  root: Node,
  value: unknown,
  limits: ValidationLimits,
  stats?: EvaluationStats,
): ValidationIssue[] {
  return evaluateFully(root, value, limits, stats).issues;
}

/**
 * Evaluates `value` against `root`. A bound hit leaves that part unchecked (`partial` says why)
 * instead of refusing: the remote server still validates, and a value is refused only for a
 * mismatch the validator is sure of.
 */
export function evaluateFully(
  root: Node,
  value: unknown,
  limits: ValidationLimits,
  stats?: EvaluationStats,
): Evaluation {
  const out: ValidationIssue[] = [];
  const ctx: Ctx = {
    out,
    sink: out,
    cap: limits.maxIssues,
    trials: 0,
    unknown: false,
    reason: undefined,
    aborted: false,
    fills: undefined,
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
  const result: Evaluation = { issues: out };
  if (ctx.unknown && ctx.reason !== undefined) result.partial = ctx.reason;
  if (ctx.fills !== undefined) result.fills = ctx.fills;
  return result;
}

function visit(node: Node, value: unknown, ctx: Ctx): void {
  if (!node.checks || halted(ctx)) return;
  if (++ctx.work > ctx.limits.maxNodes)
    return unchecked(ctx, `more than ${ctx.limits.maxNodes} units of validation work`, true);
  if (ctx.path.length > ctx.limits.maxDepth)
    return unchecked(ctx, `the arguments nest deeper than ${ctx.limits.maxDepth} levels`);
  if (!node.inPlace) return check(node, value, ctx);
  // Only nodes with in-place keywords can close a cycle, so only they are tracked.
  if (ctx.chain.indexOf(node, ctx.base) !== -1)
    return unchecked(ctx, 'the schema refers back to itself here without consuming input (a $ref cycle)');
  if (ctx.chain.length >= MAX_EVALUATION_DEPTH)
    return unchecked(ctx, `the schema nests deeper than ${MAX_EVALUATION_DEPTH} levels here`);
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
    mismatch(
      ctx,
      node.enumKeyword,
      node.enumKeyword === 'const' ? `must be equal to ${node.enumText}` : `must be one of ${node.enumText}`,
    );
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
    if (++ctx.refs > ctx.limits.maxRefs)
      return unchecked(ctx, `the schema's $refs were followed more than ${ctx.limits.maxRefs} times`, true);
    if (ctx.refDepth >= ctx.limits.maxRefDepth)
      return unchecked(ctx, `more than ${ctx.limits.maxRefDepth} $refs in a row here (${shorten(node.refText ?? '')})`);
    ctx.refDepth++;
    visit(node.ref, value, ctx);
    ctx.refDepth--;
  }
  for (const sub of node.allOf ?? []) {
    if (halted(ctx)) return;
    visit(sub, value, ctx);
  }
  if (node.anyOf !== undefined && !halted(ctx)) anyOf(node.anyOf, value, ctx);
  if (node.oneOf !== undefined && !halted(ctx)) oneOf(node.oneOf, value, ctx);
  if (node.not !== undefined && !halted(ctx)) {
    const miss = trial(node.not, value, ctx);
    if (ctx.aborted) return;
    if (miss === UNKNOWN) unchecked(ctx, 'the schema in not could not be checked');
    else if (miss === undefined) mismatch(ctx, 'not', 'must not match the schema in not');
  }
}

function anyOf(branches: readonly Node[], value: unknown, ctx: Ctx): void {
  let first: ValidationIssue | undefined;
  let unknown = false;
  for (const sub of branches) {
    const miss = trial(sub, value, ctx);
    if (ctx.aborted) return;
    if (miss === undefined) return;
    if (miss === UNKNOWN) unknown = true;
    else first ??= miss;
  }
  // A branch that could not be checked may match: not a refusal.
  if (unknown) unchecked(ctx, 'a schema in anyOf could not be checked');
  else
    mismatch(
      ctx,
      'anyOf',
      `must match at least one of the ${branches.length} schemas in anyOf (the first fails: ${describe(first)})`,
    );
}

function oneOf(branches: readonly Node[], value: unknown, ctx: Ctx): void {
  const matched: number[] = [];
  let first: ValidationIssue | undefined;
  let unknown = false;
  for (let i = 0; i < branches.length && matched.length < 2; i++) {
    const miss = trial(branches[i]!, value, ctx);
    if (ctx.aborted) return;
    if (miss === undefined) matched.push(i);
    else if (miss === UNKNOWN) unknown = true;
    else first ??= miss;
  }
  const n = branches.length;
  if (matched.length > 1)
    mismatch(
      ctx,
      'oneOf',
      `must match exactly one of the ${n} schemas in oneOf, and matches schemas ${matched[0]} and ${matched[1]}`,
    );
  else if (unknown) unchecked(ctx, 'a schema in oneOf could not be checked');
  else if (matched.length === 0)
    mismatch(
      ctx,
      'oneOf',
      `must match exactly one of the ${n} schemas in oneOf, and matches none (the first fails: ${describe(first)})`,
    );
}

/** A trial's verdict when a bound left part of it unchecked and nothing in it failed. */
const UNKNOWN: ValidationIssue = { path: '', keyword: 'unknown', message: 'not checked' };

/** Evaluates `node` on the side: its first mismatch, {@link UNKNOWN}, or undefined when the value matches. */
function trial(node: Node, value: unknown, ctx: Ctx): ValidationIssue | undefined {
  if (!node.checks) return undefined;
  const [sink, cap, unknown] = [ctx.sink, ctx.cap, ctx.unknown];
  const mine: ValidationIssue[] = [];
  [ctx.sink, ctx.cap, ctx.unknown] = [mine, 1, false];
  ctx.trials++;
  visit(node, value, ctx);
  ctx.trials--;
  const verdict = mine[0] ?? (ctx.unknown ? UNKNOWN : undefined);
  // A global bound hit inside the trial leaves everything after it unchecked, outside it too.
  [ctx.sink, ctx.cap, ctx.unknown] = [sink, cap, unknown || ctx.aborted];
  return verdict;
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
  if (
    node.minLength !== undefined &&
    s.length < node.minLength * 2 &&
    (s.length < node.minLength || measured(s, ctx) < node.minLength)
  ) {
    mismatch(ctx, 'minLength', `must be at least ${node.minLength} characters`);
  }
  if (
    node.maxLength !== undefined &&
    s.length > node.maxLength &&
    (s.length > node.maxLength * 2 || measured(s, ctx) > node.maxLength)
  ) {
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
  if (node.exclusiveMinimum !== undefined && n <= node.exclusiveMinimum)
    mismatch(ctx, 'exclusiveMinimum', `must be > ${node.exclusiveMinimum}`);
  if (node.exclusiveMaximum !== undefined && n >= node.exclusiveMaximum)
    mismatch(ctx, 'exclusiveMaximum', `must be < ${node.exclusiveMaximum}`);
}

function checkArray(node: Node, a: unknown[], ctx: Ctx): void {
  if (node.minItems !== undefined && a.length < node.minItems)
    mismatch(ctx, 'minItems', `must have at least ${node.minItems} items`);
  if (node.maxItems !== undefined && a.length > node.maxItems)
    mismatch(ctx, 'maxItems', `must have at most ${node.maxItems} items`);
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
      if (present(o, key) || ctx.fills?.has(o, key)) continue;
      if (node.defaults?.has(key) === true) {
        // A required property with a default is what the server fills itself. Outside a trial it
        // is filled (and checked like a sent value below); a branch being tried may not apply, so
        // there it is only checked as if sent.
        const value = node.defaults.get(key);
        if (ctx.trials === 0) (ctx.fills ??= new Fills()).add(o, ctx.path, key, value);
        else descend(node.properties?.get(key) ?? TRIVIAL, value, key, ctx);
        continue;
      }
      missing(ctx, key, 'required', 'is required');
    }
  }
  if (node.dependentRequired !== undefined) {
    if (!charge(ctx, node.dependentRequired.length >> 5)) return;
    for (const [key, names] of node.dependentRequired) {
      if (!present(o, key) && ctx.fills?.has(o, key) !== true) continue;
      if (!charge(ctx, names.length >> 5)) return;
      for (const name of names) {
        if (halted(ctx)) return;
        if (!present(o, name) && ctx.fills?.has(o, name) !== true)
          missing(ctx, name, 'dependentRequired', `is required when ${shorten(JSON.stringify(key), 64)} is present`);
      }
    }
  }
  if (node.properties === undefined && node.additional === undefined) return;
  const keys = Object.keys(o);
  if (!charge(ctx, keys.length >> 5)) return;
  const filled = ctx.fills?.of(o);
  if (filled !== undefined) for (const key of filled.keys()) if (!present(o, key)) keys.push(key);
  for (const key of keys) {
    if (halted(ctx)) return;
    const item = o[key] !== undefined ? o[key] : filled?.get(key);
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
