// The state of one evaluation (`./validator-evaluate.ts`) and how it records what it finds:
// mismatches, parts left unchecked, and the work spent.
import type { Node } from './validator-node.js';
import type { ValidationIssue, ValidationLimits } from './validator-types.js';
import type { Fills } from './validator-defaults.js';

/** One evaluation's state, threaded through every check. */
export interface Ctx {
  /** The result: the mismatches of the root's own evaluation (each one is certain). */
  out: ValidationIssue[];
  /** Where mismatches go now: `out`, or the throwaway list of an `anyOf`/`oneOf`/`not` trial. */
  sink: ValidationIssue[];
  /** The sink's capacity: a trial needs only its first mismatch. */
  cap: number;
  /** Trials open: defaults are filled only outside them (a branch that is tried may not apply). */
  trials: number;
  /**
   * Some part of the value in the current scope (the root, or the open trial) was not checked: a
   * bound was hit there. A scope with no mismatch and this set has an unknown verdict, which
   * `anyOf`/`oneOf`/`not` never turn into a refusal.
   */
  unknown: boolean;
  /** Why the first part was left unchecked (reported as the result's `partial`). */
  reason: string | undefined;
  /** A global bound (work, `$ref`s followed) was hit: nothing more is checked. */
  aborted: boolean;
  /** Defaults filled into objects of the value (outside trials), applied to a copy at the end. */
  fills: Fills | undefined;
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

export function halted(ctx: Ctx): boolean {
  return ctx.aborted || ctx.sink.length >= ctx.cap;
}

export function mismatch(ctx: Ctx, keyword: string, message: string): void {
  if (halted(ctx)) return;
  ctx.sink.push({ path: pointer(ctx.path), keyword, message });
}

/**
 * A bound was hit here: this part of the value is left unchecked, never refused (the remote
 * server still validates it). `stop` ends the whole evaluation (a global budget is spent).
 */
export function unchecked(ctx: Ctx, message: string, stop = false): void {
  if (ctx.aborted) return;
  ctx.unknown = true;
  ctx.reason ??= `${pointer(ctx.path) || '/'}: ${message}`;
  if (stop) ctx.aborted = true;
}

/** Spends `units` of work; false (and the rest left unchecked) once the budget is gone. */
export function charge(ctx: Ctx, units: number): boolean {
  ctx.work += units;
  if (ctx.work <= ctx.limits.maxNodes) return true;
  unchecked(ctx, `more than ${ctx.limits.maxNodes} units of validation work`, true);
  return false;
}

export function describe(issue: ValidationIssue | undefined): string {
  if (issue === undefined) return '?';
  return `${issue.path || '/'} ${shorten(issue.message)}`;
}

export function shorten(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** An undefined member has no JSON form: it is as absent as a missing one. */
export function present(o: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(o, key) && o[key] !== undefined;
}

export function missing(ctx: Ctx, key: string, keyword: string, message: string): void {
  ctx.path.push(key);
  mismatch(ctx, keyword, message);
  ctx.path.pop();
}

/** RFC 6901 JSON pointer. */
export function pointer(path: readonly (string | number)[]): string {
  let out = '';
  for (const part of path) out += `/${String(part).replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return out;
}
