import { describe, expect, it } from 'vitest';
import { DEFAULT_VALIDATION_LIMITS, compileValidator } from './validator.js';
import type { ValidationLimits } from './validator.js';
import { MAX_COMPILED_NODES, compileSchemaCounted } from './validator-compile.js';
import { evaluateFully, type EvaluationStats } from './validator-evaluate.js';

/**
 * Compiles and evaluates once, returning the issues, why a part was left unchecked (a bound hit:
 * let through, never refused) and the work the counters saw (no clocks).
 */
function run(schema: unknown, value: unknown, limits: Partial<ValidationLimits> = {}) {
  const { root, nodes } = compileSchemaCounted(schema);
  const stats: EvaluationStats = { work: 0, refs: 0 };
  const lim = { ...DEFAULT_VALIDATION_LIMITS, ...limits };
  const { issues, partial } = evaluateFully(root, value, lim, stats);
  return { issues: issues.map((i) => `${i.path} ${i.keyword}`), partial, nodes, ...stats, lim };
}

const WORK = /: more than 10000 units of validation work$/;

/** `$defs` d0 … dN where each level is built by `level(next)` and dN is `last`. */
function defsChain(n: number, level: (next: string) => unknown, last: unknown): Record<string, unknown> {
  const $defs: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) $defs[`d${i}`] = level(`#/$defs/d${i + 1}`);
  $defs[`d${n}`] = last;
  return { $defs, $ref: '#/$defs/d0' };
}

describe('hostile schemas are bounded by the work counters, and what is past a bound is let through', () => {
  it('a 10,000-deep $ref chain compiles to one node per schema and is left unchecked after 64 $refs', () => {
    const schema = defsChain(10_000, (next) => ({ $ref: next }), { type: 'string' });
    const r = run(schema, 1);
    expect(r.nodes).toBe(10_002);
    expect(r.issues).toEqual([]);
    expect(r.partial).toMatch(/^\/: more than 64 \$refs in a row here/);
    expect(r.refs).toBe(DEFAULT_VALIDATION_LIMITS.maxRefDepth + 1);
    expect(r.work).toBeLessThanOrEqual(DEFAULT_VALIDATION_LIMITS.maxRefDepth + 2);
    // The same chain as properties of an argument, and through the public API (cached compile).
    const v = compileValidator({
      type: 'object',
      properties: { a: { $ref: '#/$defs/d0' } },
      $defs: schema.$defs,
    } as never);
    expect(v({ a: 1 })).toEqual({ ok: true, partial: expect.stringContaining('/a: more than 64 $refs in a row') });
    expect(v({})).toEqual({ ok: true });
  });

  it('a 10,000-deep chain that consumes input at every step stops at the depth bound, the rest unchecked', () => {
    const schema = defsChain(10_000, (next) => ({ type: 'object', properties: { a: { $ref: next } } }), {
      type: 'string',
    });
    let value: unknown = 'x';
    for (let i = 0; i < 10_000; i++) value = { a: value };
    const r = run(schema, value);
    expect(r.issues).toEqual([]);
    expect(r.partial).toBe(`${'/a'.repeat(65)}: the arguments nest deeper than 64 levels`);
    expect(r.work).toBeLessThan(200);
    // Within the bound a mismatch is still found.
    let shallow: unknown = 1;
    for (let i = 0; i < 60; i++) shallow = { a: shallow };
    expect(run(schema, shallow).issues).toEqual([`${'/a'.repeat(60)} type`]);
  });

  it('an anyOf of anyOfs (2^40 paths through shared $defs) stops at the node budget', () => {
    const schema = defsChain(40, (next) => ({ anyOf: [{ $ref: next }, { $ref: next }] }), { type: 'string' });
    const r = run(schema, 1);
    expect(r.nodes).toBeLessThan(200);
    expect(r.issues).toEqual([]);
    expect(r.partial).toMatch(WORK);
    expect(r.work).toBe(DEFAULT_VALIDATION_LIMITS.maxNodes + 1);
    // A smaller budget stops it sooner: the counter, not luck, ends the work.
    expect(run(schema, 1, { maxNodes: 500 }).work).toBe(501);
    // A matching value takes the first branch at each level.
    expect(run(schema, 's').issues).toEqual([]);
    expect(run(schema, 's').work).toBeLessThan(200);
  });

  it('the same blow-up through shared objects (a DAG, not JSON) and through oneOf and not', () => {
    let shared: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 60; i++) shared = { anyOf: [shared, shared] };
    const r = run(shared, 1);
    expect(r.nodes).toBe(61);
    expect([r.issues, r.partial]).toEqual([[], expect.stringMatching(WORK)]);
    let one: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 60; i++) one = { oneOf: [one, { not: one }] };
    const o = run(one, 1);
    expect([o.issues, o.partial]).toEqual([[], expect.stringMatching(WORK)]);
    expect(o.work).toBe(DEFAULT_VALIDATION_LIMITS.maxNodes + 1);
  });

  it('a wide anyOf (50,000 branches) and a huge enum in every branch', () => {
    const wide = { anyOf: Array.from({ length: 50_000 }, (_, i) => ({ type: 'string', minLength: i + 1 })) };
    const r = run(wide, '');
    expect([r.issues, r.partial]).toEqual([[], expect.stringMatching(WORK)]);
    expect(r.work).toBe(DEFAULT_VALIDATION_LIMITS.maxNodes + 1);
    // Past the compile budget a branch is left unchecked, so the anyOf admits everything (the server still validates).
    const wider = {
      anyOf: Array.from({ length: MAX_COMPILED_NODES + 1 }, (_, i) => ({ type: 'string', minLength: i + 1 })),
    };
    expect(run(wider, '').issues).toEqual([]);
    const values = Array.from({ length: 100_000 }, (_, i) => `v${i}`);
    const enums = { anyOf: [{ enum: values }, { enum: values }, { const: 'x' }] };
    expect(run(enums, 'v99999').issues).toEqual([]);
    expect(run(enums, 'nope').issues).toEqual([' anyOf']);
  });

  it('a branchy schema re-scanning a big object or measuring a long string pays for each scan', () => {
    const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, 1]));
    const scan = defsChain(30, (next) => ({ anyOf: [{ $ref: next }, { $ref: next }] }), {
      properties: { zz: { type: 'string' } },
      required: ['missing'],
    });
    const r = run(scan, keys);
    expect([r.issues, r.partial]).toEqual([[], expect.stringMatching(WORK)]);
    // Each scan of 20,000 keys costs 625 units: the budget allows about 16 scans, not 2^30.
    expect(r.work).toBeLessThanOrEqual(DEFAULT_VALIDATION_LIMITS.maxNodes + 625);
    const text = 'é'.repeat(300_000);
    const measure = defsChain(30, (next) => ({ anyOf: [{ $ref: next }, { $ref: next }] }), { maxLength: 200_000 });
    const m = run(measure, text);
    expect([m.issues, m.partial]).toEqual([[], expect.stringMatching(WORK)]);
    expect(m.work).toBeLessThanOrEqual(DEFAULT_VALIDATION_LIMITS.maxNodes + 300);
  });

  it('10,000 $refs per validation at most, even when each consumes input', () => {
    const schema = {
      type: 'array',
      items: { $ref: '#/$defs/n' },
      $defs: { n: { $ref: '#/$defs/m' }, m: { type: 'integer' } },
    };
    const r = run(
      schema,
      Array.from({ length: 6_000 }, () => 1),
      { maxNodes: 1_000_000 },
    );
    expect([r.issues, r.partial]).toEqual([[], "/5000: the schema's $refs were followed more than 10000 times"]);
    expect(r.refs).toBe(DEFAULT_VALIDATION_LIMITS.maxRefs + 1);
  });

  it('deep inline nesting (allOf, not, properties 10,000 levels) neither recurses without bound nor overflows the stack', () => {
    let allOf: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i++) allOf = { allOf: [allOf] };
    expect(run(allOf, 1)).toMatchObject({ issues: [], partial: '/: the schema nests deeper than 256 levels here' });
    let not: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i++) not = { not: not };
    expect(run(not, 1)).toMatchObject({ issues: [], partial: '/: the schema nests deeper than 256 levels here' });
    let props: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i++) props = { properties: { a: props } };
    let value: unknown = 1;
    for (let i = 0; i < 10_000; i++) value = { a: value };
    expect(run(props, value)).toMatchObject({
      issues: [],
      partial: `${'/a'.repeat(65)}: the arguments nest deeper than 64 levels`,
    });
  });

  it('a schema past the compile budget leaves its remaining parts unchecked instead of growing', () => {
    const $defs = Object.fromEntries(
      Array.from({ length: 150_000 }, (_, i) => [`d${i}`, { $ref: `#/$defs/d${i + 1}` }]),
    );
    const r = run({ type: 'object', properties: { a: { $ref: '#/$defs/d0' } }, $defs }, { a: 1 });
    expect(r.nodes).toBeLessThanOrEqual(MAX_COMPILED_NODES);
    expect(r.issues).toEqual([]);
    const pointer = `#/${Array.from({ length: 200_000 }, () => 'x').join('/')}`;
    expect(run({ properties: { a: { $ref: pointer } } }, { a: 1 }).issues).toEqual([]);
  });

  it('cyclic JavaScript objects compile once per object; a cycle that consumes no input is left unchecked', () => {
    const loop: Record<string, unknown> = { type: 'object' };
    loop.allOf = [loop];
    expect(run(loop, {})).toMatchObject({
      issues: [],
      partial: '/: the schema refers back to itself here without consuming input (a $ref cycle)',
    });
    // Its own keywords are still checked before the cycle.
    expect(run(loop, 1).issues).toEqual([' type']);
    const tree: Record<string, unknown> = { type: 'object' };
    tree.properties = { child: tree };
    expect(run(tree, { child: { child: {} } }).issues).toEqual([]);
    expect(run(tree, { child: { child: 1 } }).issues).toEqual(['/child/child type']);
  });
});
