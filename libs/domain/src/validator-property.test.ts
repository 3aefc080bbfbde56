import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { JsonObject } from './types.js';
import { DEFAULT_VALIDATION_LIMITS, compileValidator } from './validator.js';
import type { ValidationLimits, ValidationResult } from './validator.js';
import { compileSchemaCounted } from './validator-compile.js';
import { evaluate, type EvaluationStats } from './validator-evaluate.js';

const KEYS = ['a', 'b', 'a/b', '~', ''];
const key = fc.constantFrom(...KEYS);
const typeName = fc.constantFrom('null', 'boolean', 'integer', 'number', 'string', 'array', 'object', 'nonsense');
const small = fc.integer({ min: -3, max: 3 });
const REFS = [
  '#',
  '#/$defs/a',
  '#/$defs/b',
  '#/properties/a',
  '#/$defs/a/anyOf/0',
  '#/$defs/%61',
  '#/$defs/a~1b',
  '#a',
  '#/nope',
  'https://example.com/x',
];

/** Random schemas over every keyword the validator models (and some it ignores); with refs, cycles and chains come for free. */
function schemas(withRefs: boolean): fc.Arbitrary<unknown> {
  return fc.letrec((tie) => ({
    schema: fc.oneof({ depthSize: 'small', maxDepth: 3 }, fc.boolean(), tie('object')),
    object: fc.record(
      {
        type: fc.oneof(typeName, fc.array(typeName, { maxLength: 3 })),
        enum: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
        const: fc.jsonValue({ maxDepth: 2 }),
        minLength: fc.nat(4),
        maxLength: fc.nat(4),
        minimum: small,
        maximum: small,
        exclusiveMinimum: fc.oneof(small, fc.boolean()),
        exclusiveMaximum: fc.oneof(small, fc.boolean()),
        minItems: fc.nat(3),
        maxItems: fc.nat(3),
        items: tie('schema'),
        prefixItems: fc.array(tie('schema'), { maxLength: 3 }),
        properties: fc.dictionary(key, tie('schema'), { maxKeys: 3 }),
        required: fc.array(key, { maxLength: 3 }),
        additionalProperties: tie('schema'),
        dependentRequired: fc.dictionary(key, fc.array(key, { maxLength: 2 }), { maxKeys: 2 }),
        allOf: fc.array(tie('schema'), { maxLength: 3 }),
        anyOf: fc.array(tie('schema'), { maxLength: 3 }),
        oneOf: fc.array(tie('schema'), { maxLength: 3 }),
        not: tie('schema'),
        pattern: fc.constant('(a+)+$'),
        ...(withRefs
          ? {
              $ref: fc.constantFrom(...REFS),
              $anchor: fc.constantFrom('a', 'b'),
              $defs: fc.record({ a: tie('schema'), b: tie('schema'), 'a/b': tie('schema') }, { requiredKeys: [] }),
            }
          : {}),
      },
      { requiredKeys: [] },
    ),
  })).schema;
}

const values: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(
    key,
    fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.dictionary(key, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })),
    { maxKeys: 4 },
  ),
  fc.array(fc.oneof(fc.jsonValue({ maxDepth: 1 }), fc.constant(undefined)), { maxLength: 5 }),
  fc.constantFrom(undefined, 2n, Number.NaN, -0, new Map()),
);

const limits: fc.Arbitrary<Partial<ValidationLimits>> = fc.record(
  {
    maxDepth: fc.nat(6),
    maxNodes: fc.integer({ min: 1, max: 300 }),
    maxIssues: fc.integer({ min: 1, max: 5 }),
    maxRefDepth: fc.nat(5),
    maxRefs: fc.nat(50),
  },
  { requiredKeys: [] },
);

const KEYWORDS = new Set([
  'type',
  'enum',
  'const',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'required',
  'additionalProperties',
  'dependentRequired',
  'false',
  'anyOf',
  'oneOf',
  'not',
  'size',
]);

function wellFormed(r: ValidationResult, maxIssues: number): void {
  // A bound hit is never a refusal: it only says which part was left unchecked.
  if (r.ok)
    return expect(r.partial === undefined || (typeof r.partial === 'string' && r.partial.startsWith('/'))).toBe(true);
  expect(r.errors.length).toBeGreaterThan(0);
  expect(r.errors.length).toBeLessThanOrEqual(maxIssues);
  for (const e of r.errors) {
    expect(Object.keys(e).sort()).toEqual(['keyword', 'message', 'path']);
    expect(KEYWORDS.has(e.keyword), e.keyword).toBe(true);
    expect(e.path === '' || e.path.startsWith('/')).toBe(true);
    expect(typeof e.message === 'string' && e.message.length > 0 && e.message.length < 1000).toBe(true);
  }
}

/** The verdict, or undefined when a bound left part of the value unchecked (or the size bound refused it). */
function verdict(schema: unknown, value: unknown): boolean | undefined {
  const r = compileValidator(schema as JsonObject)(value);
  if (r.ok) return r.partial === undefined ? true : undefined;
  return r.errors.some((e) => e.keyword === 'size') ? undefined : false;
}

describe('random schemas and values', () => {
  it('always end with a well-formed typed result, within the work bounds, and leave the schema as it was', () => {
    fc.assert(
      fc.property(schemas(true), values, limits, (schema, value, lim) => {
        const before = JSON.stringify(schema);
        const full = { ...DEFAULT_VALIDATION_LIMITS, ...lim };
        wellFormed(compileValidator(schema as JsonObject, lim)(value), full.maxIssues);
        wellFormed(compileValidator(schema as JsonObject)(value), DEFAULT_VALIDATION_LIMITS.maxIssues);
        const stats: EvaluationStats = { work: 0, refs: 0 };
        evaluate(compileSchemaCounted(schema).root, value, full, stats);
        // One charge may overshoot by its own size (a scan of at most a few keys here), never more.
        expect(stats.work).toBeLessThanOrEqual(full.maxNodes + 1);
        expect(stats.refs).toBeLessThanOrEqual(full.maxRefs + 1);
        expect(JSON.stringify(schema)).toBe(before);
      }),
      { numRuns: 400 },
    );
  });

  it('a refusal is certain: what tighter bounds refuse, the default bounds refuse too (a bound only leaves parts unchecked)', () => {
    fc.assert(
      fc.property(schemas(true), values, limits, (schema, value, lim) => {
        const tight = compileValidator(schema as JsonObject, lim)(value);
        if (!tight.ok) expect(compileValidator(schema as JsonObject)(value).ok).toBe(false);
      }),
      { numRuns: 400 },
    );
  });

  it('combine like the logic they name (allOf is and, anyOf or, oneOf xor, not not, a $ref its target)', () => {
    fc.assert(
      fc.property(schemas(false), schemas(false), values, (a, b, value) => {
        const [va, vb] = [verdict(a, value), verdict(b, value)];
        if (va === undefined || vb === undefined) return;
        const check = (schema: unknown, expected: boolean): void => {
          const v = verdict(schema, value);
          if (v !== undefined) expect(v, JSON.stringify(schema)).toBe(expected);
        };
        check({ allOf: [a, b] }, va && vb);
        check({ anyOf: [a, b] }, va || vb);
        check({ oneOf: [a, b] }, va !== vb);
        check({ not: a }, !va);
        check({ $defs: { x: a }, $ref: '#/$defs/x' }, va);
        check({ $defs: { x: { $ref: '#/$defs/y' }, y: b }, allOf: [{ $ref: '#/$defs/x' }] }, vb);
      }),
      { numRuns: 400 },
    );
  });
});
