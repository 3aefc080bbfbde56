import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  SCHEMA_MAX_BYTES,
  SCHEMA_MAX_DEPTH,
  jsonStringBytes,
  normalizeInputSchema,
  normalizeOutputSchema,
  schemaBoundsFault,
} from './schema.js';
import { encodeCanonical } from './cid.js';

describe('normalizeInputSchema', () => {
  it('keeps the schema whole minus the root $schema and $id', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'urn:x',
      type: 'object',
      properties: { q: { type: 'string', $id: 'inner', pattern: '^a', format: 'email' } },
      required: ['q'],
      $defs: { x: { $ref: '#/$defs/x' } },
      'x-vendor': [1, { a: true }],
    };
    expect(normalizeInputSchema(schema)).toEqual({
      type: 'object',
      properties: { q: { type: 'string', $id: 'inner', pattern: '^a', format: 'email' } },
      required: ['q'],
      $defs: { x: { $ref: '#/$defs/x' } },
      'x-vendor': [1, { a: true }],
    });
  });

  it('adds type object when type is absent', () => {
    expect(normalizeInputSchema({ properties: {} })).toEqual({ type: 'object', properties: {} });
    expect(normalizeInputSchema({})).toEqual({ type: 'object' });
  });

  it('replaces a root that is not an object schema', () => {
    for (const bad of [
      undefined,
      null,
      'x',
      3,
      true,
      [],
      [{ type: 'object' }],
      { type: 'string' },
      { type: ['object', 'null'] },
    ]) {
      expect(normalizeInputSchema(bad)).toEqual({ type: 'object' });
      expect(normalizeOutputSchema(bad)).toBeUndefined();
    }
  });

  it('drops undefined and turns non-JSON numbers into null, like JSON.stringify', () => {
    const out = normalizeInputSchema({
      type: 'object',
      a: undefined,
      b: [undefined, NaN, Infinity, -0],
      c: { d: undefined },
    });
    expect(out).toEqual({ type: 'object', b: [null, null, null, 0], c: {} });
    expect(Object.is((out.b as number[])[3], 0)).toBe(true);
  });

  it('keeps a __proto__ key as data without touching the prototype', () => {
    const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}') as unknown;
    const out = normalizeInputSchema(schema);
    const props = out.properties as Record<string, unknown>;
    expect(Object.getPrototypeOf(props)).toBe(Object.prototype);
    expect(Object.keys(props)).toEqual(['__proto__']);
  });

  it('replaces a schema over 256 KiB or deeper than 256 levels, and schemaBoundsFault names which', () => {
    const big = { type: 'object', description: 'x'.repeat(SCHEMA_MAX_BYTES) };
    expect(normalizeInputSchema(big)).toEqual({ type: 'object' });
    expect(normalizeOutputSchema(big)).toBeUndefined();
    const fits = { type: 'object', description: 'x'.repeat(SCHEMA_MAX_BYTES - 40) };
    expect(JSON.stringify(fits).length).toBeLessThanOrEqual(SCHEMA_MAX_BYTES);
    expect(normalizeInputSchema(fits)).toEqual(fits);

    const nest = (depth: number): Record<string, unknown> => {
      let s: Record<string, unknown> = { type: 'object' };
      for (let i = 1; i < depth; i++) s = { type: 'object', properties: { a: s } };
      return s;
    };
    // properties + a child: each level is two objects deep. 40 levels of properties are kept whole.
    expect(normalizeInputSchema(nest(40))).toEqual(nest(40));
    expect(normalizeInputSchema(nest(128))).toEqual(nest(128));
    expect(normalizeInputSchema(nest(129))).toEqual({ type: 'object' });

    expect(schemaBoundsFault(nest(128))).toBeUndefined();
    expect(schemaBoundsFault(nest(129))).toBe(`nested deeper than ${SCHEMA_MAX_DEPTH} levels of JSON`);
    expect(schemaBoundsFault(big)).toBe(`larger than ${SCHEMA_MAX_BYTES} bytes of JSON`);
    expect(schemaBoundsFault(fits)).toBeUndefined();
    // A root that is not an object schema is no fault: it falls back to {type: 'object'}.
    for (const root of [undefined, 'x', [], { type: 'string' }]) expect(schemaBoundsFault(root)).toBeUndefined();
    expect(normalizeInputSchema({ type: 'array', items: { type: 'string' } })).toEqual({ type: 'object' });
  });

  it('stops early on a huge schema instead of copying it', () => {
    const huge = { type: 'object', enum: Array.from({ length: 2_000_000 }, (_, i) => i) };
    const started = performance.now();
    expect(normalizeInputSchema(huge)).toEqual({ type: 'object' });
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('equals the JSON round trip of any JSON object schema, and encodes with dag-cbor', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })), (props) => {
        const schema = { ...props, type: 'object' };
        const out = normalizeInputSchema(schema);
        const expected = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
        delete expected.$schema;
        delete expected.$id;
        expect(out).toEqual(expected);
        expect(() => encodeCanonical(out)).not.toThrow();
      }),
    );
  });
});

describe('jsonStringBytes', () => {
  it('is the UTF-8 size of JSON.stringify of the string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(jsonStringBytes(s)).toBe(Buffer.byteLength(JSON.stringify(s), 'utf8'));
      }),
    );
    expect(jsonStringBytes('"\\\n\u0001\ud800😀')).toBe(Buffer.byteLength(JSON.stringify('"\\\n\u0001\ud800😀')));
  });
});
