import { describe, expect, it } from 'vitest';
import type { JsonObject } from './types.js';
import { compileValidator, validateArguments } from './validator.js';
import type { ValidationResult } from './validator.js';
import { buildToolDocuments } from './document.js';
import { ToolNameStyle } from './types.js';

const errors = (r: ValidationResult) => (r.ok ? [] : r.errors.map((e) => `${e.path} ${e.keyword}`));

/** Playwright MCP's take_screenshot lists `scale` (and others with a default) as required. */
const screenshot: JsonObject = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: ['png', 'jpeg'], default: 'png' },
    scale: { type: 'string', enum: ['css', 'device'], default: 'css' },
    filename: { type: 'string' },
    fullPage: { type: 'boolean' },
  },
  required: ['type', 'scale'],
  additionalProperties: false,
};

describe('defaults of required properties', () => {
  it('fills a required property left out with its default, in a copy that is what to send', () => {
    const args = { type: 'png' };
    const r = validateArguments(screenshot, args);
    expect(r).toEqual({ ok: true, filled: { type: 'png', scale: 'css' } });
    // The caller's arguments are not changed.
    expect(args).toEqual({ type: 'png' });
    expect(validateArguments(screenshot, {})).toEqual({ ok: true, filled: { type: 'png', scale: 'css' } });
    // Nothing to fill: no copy.
    expect(validateArguments(screenshot, { type: 'jpeg', scale: 'device' })).toEqual({ ok: true });
  });

  it('fills only required properties, and a required one without a default is still refused', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { a: { type: 'integer', default: 1 }, b: { type: 'integer', default: 2 }, c: { type: 'string' } },
      required: ['a', 'c'],
    };
    expect(errors(validateArguments(schema, {}))).toEqual(['/c required']);
    expect(validateArguments(schema, { c: 'x' })).toEqual({ ok: true, filled: { c: 'x', a: 1 } });
    // A filled property is present for dependentRequired, as it will be on the server.
    const dependent: JsonObject = { ...schema, dependentRequired: { a: ['b'], d: ['a'] } };
    expect(errors(validateArguments(dependent, { c: 'x' }))).toEqual(['/b dependentRequired']);
    expect(validateArguments(dependent, { c: 'x', b: 2, d: 0 })).toEqual({
      ok: true,
      filled: { c: 'x', b: 2, d: 0, a: 1 },
    });
  });

  it('checks a filled default like a sent value, and a sent value is never replaced', () => {
    const broken: JsonObject = {
      type: 'object',
      properties: { n: { type: 'integer', default: 'ten' } },
      required: ['n'],
    };
    expect(errors(validateArguments(broken, {}))).toEqual(['/n type']);
    expect(validateArguments(broken, { n: 3 })).toEqual({ ok: true });
    // null is a value, not a missing property.
    expect(errors(validateArguments(screenshot, { type: 'png', scale: null }))).toEqual(['/scale type']);
  });

  it('fills at every level the validator walks: nested objects, array items, $ref targets, allOf, defaults inside defaults', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        page: {
          type: 'object',
          properties: { size: { type: 'integer', default: 10 }, sort: { type: 'string' } },
          required: ['size'],
        },
        shots: { type: 'array', items: { $ref: '#/$defs/shot' } },
        box: {
          type: 'object',
          properties: {
            inner: {
              type: 'object',
              properties: { depth: { type: 'integer', default: 3 } },
              required: ['depth'],
              default: {},
            },
          },
          required: ['inner'],
        },
      },
      allOf: [{ properties: { mode: { const: 'fast', default: 'fast' } }, required: ['mode'] }],
      $defs: {
        shot: { type: 'object', properties: { scale: { type: 'string', default: 'css' } }, required: ['scale'] },
      },
    };
    const args = { page: { sort: 'asc' }, shots: [{}, { scale: 'device' }], box: {} };
    const r = validateArguments(schema, args);
    expect(r).toEqual({
      ok: true,
      filled: {
        page: { sort: 'asc', size: 10 },
        shots: [{ scale: 'css' }, { scale: 'device' }],
        box: { inner: { depth: 3 } },
        mode: 'fast',
      },
    });
    expect(args).toEqual({ page: { sort: 'asc' }, shots: [{}, { scale: 'device' }], box: {} });
    // The filled default is a copy: changing what was sent does not change the schema.
    if (r.ok) (r.filled!.box as { inner: { depth: number } }).inner.depth = 99;
    expect(validateArguments(schema, { box: {} })).toMatchObject({ filled: { box: { inner: { depth: 3 } } } });
  });

  it('inside anyOf/oneOf/not a default counts as sent, but is not filled (the branch may not apply)', () => {
    const schema: JsonObject = {
      type: 'object',
      anyOf: [{ properties: { kind: { const: 'a', default: 'a' } }, required: ['kind'] }, { required: ['other'] }],
    };
    expect(validateArguments(schema, {})).toEqual({ ok: true });
    const bad: JsonObject = {
      type: 'object',
      anyOf: [{ properties: { kind: { const: 'a', default: 'b' } }, required: ['kind'] }, { required: ['other'] }],
    };
    expect(errors(validateArguments(bad, {}))).toEqual([' anyOf']);
  });

  it('a tool document keeps the default in its schema, and a compiled validator fills per call', () => {
    const [doc] = buildToolDocuments('browser', [{ name: 'take_screenshot', inputSchema: screenshot }], {
      style: ToolNameStyle.double_underscore,
    });
    expect(doc!.inputSchema).toEqual(screenshot);
    const validate = compileValidator(doc!.inputSchema);
    expect(validate({ type: 'jpeg' })).toEqual({ ok: true, filled: { type: 'jpeg', scale: 'css' } });
    expect(validate({ type: 'jpeg', scale: 'device' })).toEqual({ ok: true });
    // A real mismatch is refused naming the field, default or not.
    expect(errors(validate({ type: 'gif' }))).toEqual(['/type enum']);
    expect(errors(validate({ type: 'png', extra: 1 }))).toEqual(['/extra additionalProperties']);
  });
});

describe('the schema rule: kept whole, checked within bounds, the rest let through', () => {
  it('validates a 40-deep schema at every level, and lets through what lies past the depth bound', () => {
    let schema: JsonObject = {
      type: 'object',
      properties: { leaf: { type: 'string', default: 'x' } },
      required: ['leaf'],
    };
    for (let i = 0; i < 39; i++) schema = { type: 'object', properties: { n: schema }, required: ['n'] };
    const [doc] = buildToolDocuments('deep', [{ name: 'deep', inputSchema: schema }], {
      style: ToolNameStyle.double_underscore,
    });
    expect(doc!.inputSchema).toEqual(schema);
    const at = (leaf: unknown): unknown => {
      let v: unknown = leaf;
      for (let i = 0; i < 39; i++) v = { n: v };
      return v;
    };
    expect(validateArguments(doc!.inputSchema, at({ leaf: 'ok' }))).toEqual({ ok: true });
    expect(errors(validateArguments(doc!.inputSchema, at({ leaf: 1 })))).toEqual([`${'/n'.repeat(39)}/leaf type`]);
    expect(validateArguments(doc!.inputSchema, at({}))).toEqual({ ok: true, filled: at({ leaf: 'x' }) });
    // A tighter depth bound leaves the deep part unchecked instead of refusing it.
    expect(compileValidator(doc!.inputSchema, { maxDepth: 20 })(at({ leaf: 1 }))).toEqual({
      ok: true,
      partial: `${'/n'.repeat(21)}: the arguments nest deeper than 20 levels`,
    });
  });

  it('lets through a shape it does not model (pattern, format, if/then, an external $ref, patternProperties)', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        id: { type: 'string', pattern: '^[a-z]+$', format: 'uuid' },
        remote: { $ref: 'https://example.com/schemas/thing.json' },
        cond: { if: { type: 'string' }, then: { minLength: 5 }, else: { type: 'number' } },
      },
      patternProperties: { '^x-': { type: 'string' } },
      additionalProperties: false,
    };
    expect(validateArguments(schema, { id: 'NOT-LOWER', remote: 42, cond: 'ab', 'x-extra': 1, other: true })).toEqual({
      ok: true,
    });
    // Keywords it models beside them still refuse.
    expect(errors(validateArguments(schema, { id: 7 }))).toEqual(['/id type']);
  });

  it('a non-object root falls back to {type: object}, which admits any object', () => {
    for (const inputSchema of [{ type: 'string' }, ['x'], 'nonsense', null]) {
      const [doc] = buildToolDocuments('odd', [{ name: 'odd', inputSchema }], {
        style: ToolNameStyle.double_underscore,
      });
      expect(doc!.inputSchema).toEqual({ type: 'object' });
      expect(validateArguments(doc!.inputSchema, { anything: [1, 2] })).toEqual({ ok: true });
    }
  });
});
