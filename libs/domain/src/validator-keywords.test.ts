import { describe, expect, it } from 'vitest';
import type { JsonObject } from './types.js';
import { compileValidator, validateArguments } from './validator.js';
import type { ValidationResult } from './validator.js';
import { buildToolDocuments } from './document.js';
import { ToolNameStyle } from './types.js';

const errors = (r: ValidationResult) => (r.ok ? [] : r.errors.map((e) => `${e.path} ${e.keyword}`));
const check = (schema: JsonObject, value: unknown) => errors(validateArguments(schema, value));

describe('JSON Schema 2020-12: $ref and $defs', () => {
  it('resolves #/$defs and #/definitions, reporting the argument path and the keyword of the target', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/name' }, b: { $ref: '#/definitions/count' } },
      $defs: { name: { type: 'string', minLength: 2 } },
      definitions: { count: { type: 'integer', minimum: 0 } },
    };
    expect(check(schema, { a: 'ok', b: 3 })).toEqual([]);
    expect(check(schema, { a: 'x', b: -1 })).toEqual(['/a minLength', '/b minimum']);
    expect(check(schema, { a: 1, b: 'x' })).toEqual(['/a type', '/b type']);
  });

  it('resolves # (the root) for recursive schemas that consume input', () => {
    const tree: JsonObject = {
      type: 'object',
      properties: { value: { type: 'number' }, children: { type: 'array', items: { $ref: '#' } } },
      required: ['value'],
    };
    expect(check(tree, { value: 1, children: [{ value: 2, children: [{ value: 3 }] }] })).toEqual([]);
    expect(check(tree, { value: 1, children: [{ value: 2, children: [{ value: 'x' }, {}] }] })).toEqual([
      '/children/0/children/0/value type',
      '/children/0/children/1/value required',
    ]);
  });

  it('decodes JSON-pointer escapes (~0, ~1), percent-encoding and array indexes', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        slash: { $ref: '#/$defs/a~1b' },
        tilde: { $ref: '#/$defs/t~0x' },
        space: { $ref: '#/$defs/with%20space' },
        percent: { $ref: '#/$defs/100%25' },
        both: { $ref: '#/$defs/~01' },
        index: { $ref: '#/$defs/choice/anyOf/1' },
      },
      $defs: {
        'a/b': { type: 'string' },
        't~x': { type: 'boolean' },
        'with space': { type: 'null' },
        '100%': { type: 'integer' },
        '~1': { const: 'tilde-one' },
        choice: { anyOf: [{ type: 'string' }, { type: 'array' }] },
      },
    };
    expect(check(schema, { slash: 's', tilde: true, space: null, percent: 1, both: 'tilde-one', index: [] })).toEqual(
      [],
    );
    expect(check(schema, { slash: 1, tilde: 1, space: 1, percent: 'x', both: 'x', index: 's' })).toEqual([
      '/slash type',
      '/tilde type',
      '/space type',
      '/percent type',
      '/both const',
      '/index type',
    ]);
  });

  it('resolves #anchor names given by $anchor', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { p: { $ref: '#pos' } },
      $defs: { n: { $anchor: 'pos', type: 'number', exclusiveMinimum: 0 } },
    };
    expect(check(schema, { p: 1 })).toEqual([]);
    expect(check(schema, { p: 0 })).toEqual(['/p exclusiveMinimum']);
    // An $anchor inside data (an enum, a const) names nothing.
    expect(
      check({ properties: { p: { $ref: '#fake' } }, enum: [{ $anchor: 'fake', p: 1 }, { p: 1 }] }, { p: 1 }),
    ).toEqual([]);
  });

  it('evaluates $ref beside its siblings (2020-12), and a $ref to a boolean schema', () => {
    const schema: JsonObject = {
      $defs: { s: { type: 'string' }, no: false, yes: true },
      properties: { x: { $ref: '#/$defs/s', maxLength: 2 }, n: { $ref: '#/$defs/no' }, y: { $ref: '#/$defs/yes' } },
    };
    expect(check(schema, { x: 'ab', y: 1 })).toEqual([]);
    expect(check(schema, { x: 'abc' })).toEqual(['/x maxLength']);
    expect(check(schema, { x: 3 })).toEqual(['/x type']);
    expect(check(schema, { n: 1 })).toEqual(['/n false']);
  });

  it('leaves a $ref inside a subschema with its own $id to the server (its base is another resource)', () => {
    const schema: JsonObject = {
      properties: {
        x: {
          $id: 'https://example.com/inner',
          properties: { y: { $ref: '#/$defs/s' } },
          $defs: { s: { type: 'string' } },
        },
      },
      $defs: { s: { type: 'integer' } },
    };
    expect(check(schema, { x: { y: 'text' } })).toEqual([]);
    expect(check(schema, { x: { y: 1 } })).toEqual([]);
  });

  it('leaves a $ref cycle that consumes no input unchecked (let through, never looping)', () => {
    const cases: JsonObject[] = [
      { $ref: '#' },
      { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' },
      { type: 'object', allOf: [{ $ref: '#' }] },
      { anyOf: [{ type: 'string' }, { $ref: '#' }] },
      { not: { $ref: '#' } },
      { oneOf: [{ $ref: '#' }, { type: 'null' }] },
    ];
    for (const schema of cases) {
      const r = compileValidator(schema)({});
      expect(r, JSON.stringify(schema)).toEqual({ ok: true, partial: expect.stringContaining('cycle') });
    }
    // What is checked before the cycle still refuses: the allOf case's own type.
    expect(errors(compileValidator(cases[2]!)(1))).toEqual([' type']);
    // A cycle behind a branch that already matched is never reached.
    expect(compileValidator({ anyOf: [{ type: 'string' }, { $ref: '#' }] })('s').ok).toBe(true);
    // Beside a branch that admits everything the anyOf admits everything: nothing to refuse.
    expect(compileValidator({ anyOf: [{}, { $ref: '#' }] })(1).ok).toBe(true);
    // The cycle is found at the argument that reaches it.
    expect(
      compileValidator({ properties: { deep: { properties: { x: { $ref: '#/properties/deep/properties/x' } } } } })({
        deep: { x: 1 },
      }),
    ).toEqual({
      ok: true,
      partial: '/deep/x: the schema refers back to itself here without consuming input (a $ref cycle)',
    });
  });

  it('follows at most 64 $refs in a row at one value, and counts them per value', () => {
    const chain = (n: number): JsonObject => {
      const $defs: Record<string, JsonObject> = {};
      for (let i = 0; i < n; i++) $defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
      $defs[`d${n}`] = { type: 'string' };
      return { type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs };
    };
    expect(check(chain(63), { x: 's' })).toEqual([]);
    expect(check(chain(63), { x: 1 })).toEqual(['/x type']);
    // Past the bound the value is left unchecked, not refused: the server still validates.
    const r = validateArguments(chain(64), { x: 1 });
    expect(r).toEqual({ ok: true, partial: expect.stringMatching(/^\/x: more than 64 \$refs in a row/) });
    expect(errors(compileValidator(chain(64), { maxRefDepth: 100 })({ x: 1 }))).toEqual(['/x type']);
    // A recursive schema spends one $ref per level of the value: deep values stay within the bound.
    const list: JsonObject = {
      $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } },
      $ref: '#/$defs/node',
    };
    let value: unknown = {};
    for (let i = 0; i < 30; i++) value = { next: value };
    expect(validateArguments(list, value)).toEqual({ ok: true });
  });
});

describe('JSON Schema 2020-12: applicators', () => {
  it('allOf: every subschema applies, each reporting its own keyword', () => {
    const schema: JsonObject = { allOf: [{ type: 'string' }, { minLength: 2 }, { maxLength: 3 }] };
    expect(check(schema, 'ab')).toEqual([]);
    expect(check(schema, 'a')).toEqual([' minLength']);
    expect(check(schema, 'abcd')).toEqual([' maxLength']);
    expect(check(schema, 1)).toEqual([' type']);
    expect(check({ properties: { p: { allOf: [{ required: ['a'] }, { required: ['b'] }] } } }, { p: {} })).toEqual([
      '/p/a required',
      '/p/b required',
    ]);
  });

  it('anyOf: one matching subschema is enough; none says which failed first', () => {
    const schema: JsonObject = {
      properties: {
        id: {
          anyOf: [
            { type: 'string', minLength: 1 },
            { type: 'integer', minimum: 1 },
          ],
        },
      },
    };
    expect(check(schema, { id: 'x' })).toEqual([]);
    expect(check(schema, { id: 5 })).toEqual([]);
    const r = validateArguments(schema, { id: 0 });
    expect(r).toEqual({
      ok: false,
      errors: [
        {
          path: '/id',
          keyword: 'anyOf',
          message:
            'must match at least one of the 2 schemas in anyOf (the first fails: /id must be string, got integer)',
        },
      ],
    });
    expect(check(schema, { id: '' })).toEqual(['/id anyOf']);
  });

  it('oneOf: exactly one subschema must match', () => {
    const schema: JsonObject = { oneOf: [{ type: 'integer' }, { type: 'number', maximum: 10 }] };
    expect(check(schema, 11)).toEqual([]);
    expect(check(schema, 1.5)).toEqual([]);
    const two = validateArguments(schema, 3);
    expect(two.ok ? '' : two.errors[0]?.message).toBe(
      'must match exactly one of the 2 schemas in oneOf, and matches schemas 0 and 1',
    );
    const none = validateArguments(schema, 'x');
    expect(errors(none)).toEqual([' oneOf']);
    expect(none.ok ? '' : none.errors[0]?.message).toMatch(
      /matches none \(the first fails: \/ must be integer, got string\)/,
    );
    // Two branches that admit everything: nothing can match exactly one.
    expect(check({ oneOf: [{}, true] }, 1)).toEqual([' oneOf']);
    expect(check({ oneOf: [{}] }, 1)).toEqual([]);
  });

  it('not: the subschema must fail', () => {
    const schema: JsonObject = { properties: { name: { type: 'string', not: { const: 'root' } } } };
    expect(check(schema, { name: 'alice' })).toEqual([]);
    expect(check(schema, { name: 'root' })).toEqual(['/name not']);
    expect(check({ not: {} }, 1)).toEqual([' not']);
    expect(check({ not: true }, null)).toEqual([' not']);
    expect(check({ not: false }, null)).toEqual([]);
  });

  it('a branch a bound left unchecked is unknown: never a refusal of its own, never a pass for not', () => {
    let deep: JsonObject = { type: 'string' };
    for (let i = 0; i < 70; i++) deep = { type: 'array', items: deep };
    let value: unknown = 1;
    for (let i = 0; i < 70; i++) value = [value];
    // The deep branch cannot be judged; the other fails: the verdict is unknown, so the value passes.
    for (const schema of [
      { not: deep },
      { anyOf: [deep, { type: 'string' }] },
      { oneOf: [deep, { type: 'object' }] },
    ] as JsonObject[]) {
      const r = validateArguments(schema, value);
      expect(r, JSON.stringify(Object.keys(schema))).toEqual({
        ok: true,
        partial: `${'/0'.repeat(65)}: the arguments nest deeper than 64 levels`,
      });
    }
    // A certain mismatch stays one: a branch that fails within the bound, or two that both match.
    expect(check({ anyOf: [deep, { type: 'string' }] }, 1)).toEqual([' anyOf']);
    expect(check({ oneOf: [deep, { type: 'array' }, {}] }, value)).toEqual([' oneOf']);
    expect(check({ not: { anyOf: [deep, { type: 'array' }] } }, value)).toEqual([' not']);
    const budget = compileValidator(
      { not: { type: 'array', items: { type: 'integer' } } },
      { maxNodes: 10 },
    )(Array.from({ length: 50 }, () => 1));
    expect(budget).toEqual({ ok: true, partial: '/8: more than 10 units of validation work' });
  });
});

describe('JSON Schema 2020-12: const, prefixItems, dependentRequired', () => {
  it('const compares as JSON', () => {
    expect(check({ const: null }, null)).toEqual([]);
    expect(check({ const: null }, 0)).toEqual([' const']);
    expect(check({ const: { a: [1, { b: true }] } }, { a: [1.0, { b: true }] })).toEqual([]);
    expect(check({ const: { a: [1, { b: true }] } }, { a: [1, { b: false }] })).toEqual([' const']);
    expect(check({ const: 'x', type: 'string' }, 'y')).toEqual([' const']);
  });

  it('prefixItems checks leading positions; items applies after them', () => {
    const pair: JsonObject = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] };
    expect(check(pair, ['a', 1])).toEqual([]);
    expect(check(pair, ['a'])).toEqual([]);
    expect(check(pair, ['a', 1, { any: 'thing' }])).toEqual([]);
    expect(check(pair, [1, 'a'])).toEqual(['/0 type', '/1 type']);
    const closed: JsonObject = { prefixItems: [{ type: 'string' }], items: false };
    expect(check(closed, ['a'])).toEqual([]);
    expect(check(closed, ['a', 'b', 'c'])).toEqual(['/1 false', '/2 false']);
    const rest: JsonObject = { prefixItems: [{ type: 'string' }, {}], items: { type: 'boolean' } };
    expect(check(rest, ['a', 'anything', true, false])).toEqual([]);
    expect(check(rest, ['a', 'anything', true, 'no'])).toEqual(['/3 type']);
  });

  it('dependentRequired: a present key requires its dependents', () => {
    const schema: JsonObject = { type: 'object', dependentRequired: { card: ['expiry', 'cvc'], 'a/b': ['c'] } };
    expect(check(schema, {})).toEqual([]);
    expect(check(schema, { card: '4111', expiry: '12/30', cvc: '123' })).toEqual([]);
    expect(check(schema, { expiry: '12/30' })).toEqual([]);
    const r = validateArguments(schema, { card: '4111', expiry: '12/30', 'a/b': 1 });
    expect(r).toEqual({
      ok: false,
      errors: [
        { path: '/cvc', keyword: 'dependentRequired', message: 'is required when "card" is present' },
        { path: '/c', keyword: 'dependentRequired', message: 'is required when "a/b" is present' },
      ],
    });
  });
});

describe('the schema is handed on whole', () => {
  const schema: JsonObject = {
    type: 'object',
    properties: { node: { $ref: '#/$defs/node' }, pick: { anyOf: [{ const: 'a' }, { $ref: '#/definitions/n' }] } },
    $defs: {
      node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } }, dependentRequired: { a: ['b'] } },
    },
    definitions: { n: { type: 'number', not: { const: 0 } } },
    prefixItems: [{ $ref: '#' }],
  };

  it('compiling and validating never change or expand it', () => {
    const copy = structuredClone(schema);
    const before = JSON.stringify(copy);
    const validate = compileValidator(copy);
    validate({ node: { next: { next: {} } }, pick: 0 });
    validate({ node: { next: 1 } });
    validateArguments(copy, { pick: 'a' });
    expect(JSON.stringify(copy)).toBe(before);
  });

  it('a tool document carries $ref, $defs and every applicator as the server sent them', () => {
    const [doc] = buildToolDocuments('demo', [{ name: 't', inputSchema: structuredClone(schema) }], {
      style: ToolNameStyle.double_underscore,
    });
    expect(doc?.inputSchema).toEqual(schema);
    expect(errors(validateArguments(doc!.inputSchema, { node: { next: { a: 1 } }, pick: 0 }))).toEqual([
      '/node/next/b dependentRequired',
      '/pick anyOf',
    ]);
  });
});
