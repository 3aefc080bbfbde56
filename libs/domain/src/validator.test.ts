import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { JsonObject, JsonValue } from './types.js';
import { DEFAULT_VALIDATION_LIMITS, compileValidator, validateArguments } from './validator.js';
import { compileSchema } from './validator-compile.js';
import { evaluate } from './validator-evaluate.js';
import type { ValidationResult } from './validator.js';
import { jsonSizeExceeds } from './json-measure.js';

const errors = (r: ValidationResult) => (r.ok ? [] : r.errors.map((e) => `${e.path} ${e.keyword}`));

describe('validateArguments', () => {
  const issueSchema: JsonObject = {
    type: 'object',
    properties: {
      title: { type: 'string', minLength: 1, maxLength: 5 },
      count: { type: 'integer', minimum: 1, maximum: 10 },
      ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
      state: { enum: ['open', 'closed', null] },
      labels: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } },
      meta: { type: 'object', properties: { 'a/b~c': { const: { x: [1, 2] } } }, additionalProperties: false },
      any: {},
    },
    required: ['title'],
    additionalProperties: { type: 'boolean' },
  };

  it('accepts a matching value', () => {
    expect(
      validateArguments(issueSchema, {
        title: 'héllo',
        count: 3,
        ratio: 0.5,
        state: null,
        labels: ['x'],
        meta: { 'a/b~c': { x: [1, 2] } },
        any: [{}],
        flag: true,
      }),
    ).toEqual({ ok: true });
  });

  it('reports each keyword with a JSON pointer', () => {
    const r = validateArguments(issueSchema, {
      count: 1.5,
      ratio: 1,
      state: 'merged',
      labels: [],
      meta: { 'a/b~c': { x: [2, 1] }, extra: 1 },
      flag: 'yes',
    });
    expect(errors(r)).toEqual([
      '/title required',
      '/count type',
      '/ratio exclusiveMaximum',
      '/state enum',
      '/labels minItems',
      '/meta/a~1b~0c const',
      '/meta/extra additionalProperties',
      '/flag type',
    ]);
    expect(errors(validateArguments(issueSchema, { title: '', labels: ['a', 'b', 3], count: 11 }))).toEqual([
      '/title minLength',
      '/labels maxItems',
      '/labels/2 type',
      '/count maximum',
    ]);
    expect(errors(validateArguments(issueSchema, { title: 'toolong' }))).toEqual(['/title maxLength']);
    expect(errors(validateArguments(issueSchema, 'x'))).toEqual([' type']);
  });

  it('writes messages a model can act on', () => {
    const r = validateArguments(
      { type: 'object', properties: { n: { type: ['integer', 'null'] } }, required: ['q'] },
      { n: 'x' },
    );
    expect(r).toEqual({
      ok: false,
      errors: [
        { path: '/q', keyword: 'required', message: 'is required' },
        { path: '/n', keyword: 'type', message: 'must be integer or null, got string' },
      ],
    });
  });

  it('counts string length in code points', () => {
    const schema: JsonObject = { type: 'string', minLength: 2, maxLength: 2 };
    expect(validateArguments(schema, '😀😀').ok).toBe(true);
    expect(validateArguments(schema, '😀').ok).toBe(false);
    expect(validateArguments(schema, '😀😀😀').ok).toBe(false);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.nat(12), fc.nat(12), (s, min, max) => {
        const n = [...s].length;
        expect(validateArguments({ minLength: min, maxLength: max }, s).ok).toBe(n >= min && n <= max);
      }),
    );
  });

  it('checks numeric bounds like the comparison operators', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        (v, bound) => {
          expect(validateArguments({ minimum: bound }, v).ok).toBe(v >= bound);
          expect(validateArguments({ maximum: bound }, v).ok).toBe(v <= bound);
          expect(validateArguments({ exclusiveMinimum: bound }, v).ok).toBe(v > bound);
          expect(validateArguments({ exclusiveMaximum: bound }, v).ok).toBe(v < bound);
        },
      ),
    );
    for (const b of [-1, 0, 1, 2.5]) {
      expect(validateArguments({ minimum: b, maximum: b }, b).ok).toBe(true);
      expect(validateArguments({ exclusiveMinimum: b }, b).ok).toBe(false);
      expect(validateArguments({ exclusiveMaximum: b }, b).ok).toBe(false);
    }
    // Draft 4 booleans.
    expect(validateArguments({ minimum: 1, exclusiveMinimum: true }, 1).ok).toBe(false);
    expect(validateArguments({ maximum: 1, exclusiveMaximum: true }, 0.5).ok).toBe(true);
  });

  it('types JSON values, with integers as numbers too', () => {
    const cases: [unknown, string[]][] = [
      [null, ['null']],
      [true, ['boolean']],
      [3, ['integer', 'number']],
      [3.5, ['number']],
      ['s', ['string']],
      [[], ['array']],
      [{}, ['object']],
      [2n, ['integer', 'number']],
      [undefined, []],
      [NaN, []],
      [new Map(), []],
      [new Uint8Array(1), []],
    ];
    for (const [value, types] of cases) {
      for (const t of ['null', 'boolean', 'integer', 'number', 'string', 'array', 'object']) {
        expect(validateArguments({ type: t }, value).ok, `${String(value)} as ${t}`).toBe(types.includes(t));
      }
    }
  });

  it('compares enum and const values as JSON (key order, 1 and 1.0 alike)', () => {
    expect(validateArguments({ enum: [{ a: 1, b: [true] }] }, { b: [true], a: 1.0 }).ok).toBe(true);
    expect(validateArguments({ enum: [{ a: 1 }] }, { a: 1, b: undefined }).ok).toBe(true);
    expect(validateArguments({ enum: [{ a: 1 }] }, { a: '1' }).ok).toBe(false);
    expect(validateArguments({ const: 0 }, -0).ok).toBe(true);
    expect(validateArguments({ const: [1] }, [1, 2]).ok).toBe(false);
    expect(validateArguments({ enum: [] }, 'x').ok).toBe(false);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 3 }), (a, b) => {
        const same = JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
        const [ja, jb] = [a, b] as JsonValue[];
        expect(validateArguments({ enum: [ja!] }, b).ok).toBe(same);
        expect(validateArguments({ enum: [jb!, ja!] }, a).ok).toBe(true);
      }),
    );
  });

  it('ignores keywords it does not model, and $refs it cannot resolve in the schema', () => {
    const schema = {
      type: 'object',
      properties: {
        s: { type: 'string', pattern: '^a$', format: 'email' },
        r: { $ref: '#/x' },
        remote: { $ref: 'https://example.com/schemas/thing.json' },
        relative: { $ref: 'other.json#/$defs/a' },
        anchor: { $ref: '#nowhere' },
        broken: { $ref: '#/%E0%A4%A' },
        proto: { $ref: '#/__proto__' },
        dynamic: { $dynamicRef: '#meta' },
        cond: { if: { type: 'string' }, then: { minLength: 100 } },
      },
      multipleOf: 7,
    } as JsonObject;
    expect(
      validateArguments(schema, {
        s: 'nope',
        r: 1,
        remote: 1,
        relative: 1,
        anchor: 1,
        broken: 1,
        proto: 1,
        dynamic: 1,
        cond: 'x',
      }),
    ).toEqual({ ok: true });
    // The tuple form of drafts before 2020-12 is left to the server.
    expect(validateArguments({ type: 'array', items: [{ type: 'string' }] }, [1]).ok).toBe(true);
    expect(validateArguments({ type: 'nonsense' }, 1).ok).toBe(true);
  });

  it('leaves additionalProperties to the server when patternProperties is present', () => {
    expect(validateArguments({ patternProperties: { '^x': {} }, additionalProperties: false }, { x1: 1 }).ok).toBe(
      true,
    );
  });

  it('accepts anything under the empty and true schemas and nothing under false', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(validateArguments({}, v).ok).toBe(true);
        expect(compileValidator(true)(v).ok).toBe(true);
        expect(compileValidator(false)(v).ok).toBe(false);
      }),
    );
    expect(errors(validateArguments({ properties: { x: false as unknown as JsonObject } }, { x: 1 }))).toEqual([
      '/x false',
    ]);
  });

  it('refuses arguments over 1 MiB of JSON with a single size issue', () => {
    const r = validateArguments({ type: 'object' }, { s: 'x'.repeat(1024 * 1024) });
    expect(r).toEqual({
      ok: false,
      errors: [{ path: '', keyword: 'size', message: expect.stringContaining('bytes') }],
    });
    expect(validateArguments({ type: 'object' }, { s: 'x'.repeat(1024 * 1024 - 20) }).ok).toBe(true);
  });

  it('reports at most 20 issues', () => {
    const schema: JsonObject = { type: 'array', items: { type: 'string' } };
    const r = validateArguments(
      schema,
      Array.from({ length: 100 }, (_, i) => i),
    );
    expect(r.ok ? 0 : r.errors.length).toBe(20);
    const small = compileValidator(schema, { maxIssues: 3 })(Array.from({ length: 100 }, (_, i) => i));
    expect(small.ok ? 0 : small.errors.length).toBe(3);
  });

  it('bounds depth: a value the schema follows is checked 64 levels deep, and deeper parts are let through', () => {
    let schema: JsonObject = { type: 'string' };
    for (let i = 0; i < 70; i++) schema = { type: 'array', items: schema };
    let value: unknown = 1;
    for (let i = 0; i < 70; i++) value = [value];
    expect(validateArguments(schema, value)).toEqual({
      ok: true,
      partial: `${'/0'.repeat(65)}: the arguments nest deeper than 64 levels`,
    });
    // A mismatch within the bound is refused: 40 levels down.
    let forty: unknown = 1;
    for (let i = 0; i < 40; i++) forty = [forty];
    expect(errors(validateArguments(schema, forty))).toEqual([`${'/0'.repeat(40)} type`]);
    // An unconstrained deep value is fine: nothing follows it.
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(validateArguments({ type: 'object', properties: { d: {} } }, { d: deep }).ok).toBe(true);
  });

  it('bounds work: past 10,000 visited nodes the rest is let through, and mismatches found before stay', () => {
    const items = Array.from({ length: 20_000 }, (): unknown => 1);
    const r = validateArguments({ type: 'array', items: { type: 'integer' } }, items);
    // The root array is the first node, so the 10,000th item is the first over the limit.
    expect(r).toEqual({ ok: true, partial: '/9999: more than 10000 units of validation work' });
    items[5] = 'x';
    items[15_000] = 'y';
    expect(errors(validateArguments({ type: 'array', items: { type: 'integer' } }, items))).toEqual(['/5 type']);
    expect(
      compileValidator(
        { type: 'array', items: { type: 'integer' } },
        { maxNodes: 30_000 },
      )(Array.from({ length: 20_000 }, () => 1)).ok,
    ).toBe(true);
  });

  it('does not hang on hostile schemas', () => {
    const bigEnum: JsonObject = { enum: Array.from({ length: 100_000 }, (_, i) => ({ id: i, tag: `t${i}` })) };
    const check = compileValidator(bigEnum);
    for (let i = 0; i < 1000; i++) check({ tag: 't99999', id: 99_999 });
    expect(check({ tag: 't99999', id: 99_999 }).ok).toBe(true);
    expect(check({ id: -1 }).ok).toBe(false);
    expect(compileValidator({ enum: Array.from({ length: 100_000 }, (_, i) => `v${i}`) })('v5').ok).toBe(true);

    let nested: JsonObject = { type: 'object' };
    for (let i = 0; i < 5000; i++) nested = { type: 'object', properties: { a: nested }, required: ['a'] };
    expect(validateArguments(nested, {}).ok).toBe(false);
    // Bounded by work, not by a clock: one compound enum lookup costs the value's nodes.
    const stats = { work: 0, refs: 0 };
    evaluate(compileSchema(bigEnum), { tag: 't99999', id: 99_999 }, DEFAULT_VALIDATION_LIMITS, stats);
    expect(stats.work).toBe(4);
  });

  it('costs a handful of work units per call for a small schema', () => {
    const stats = { work: 0, refs: 0 };
    const issues = evaluate(
      compileSchema(issueSchema),
      { title: 'hi', count: 2, labels: ['a'], state: 'open' },
      DEFAULT_VALIDATION_LIMITS,
      stats,
    );
    expect(issues).toEqual([]);
    // The root, title, count, labels, its one item, and state: one unit each.
    expect(stats).toEqual({ work: 6, refs: 0 });
  });

  it('caches the compiled validator per schema object', () => {
    const schema: JsonObject = { type: 'object', required: ['a'] };
    expect(validateArguments(schema, {}).ok).toBe(false);
    expect(validateArguments(schema, { a: 1 }).ok).toBe(true);
  });
});

describe('jsonSizeExceeds', () => {
  it('agrees with the UTF-8 size of JSON.stringify', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.nat(300), (value, max) => {
        const size = Buffer.byteLength(JSON.stringify(value), 'utf8');
        expect(jsonSizeExceeds(value, max)).toBe(size > max);
      }),
    );
    expect(jsonSizeExceeds({ a: undefined, b: [undefined] }, 12)).toBe(false);
    expect(jsonSizeExceeds({ a: undefined, b: [undefined] }, 11)).toBe(true);
  });
});

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  }
  return v === 0 ? 0 : v;
}
