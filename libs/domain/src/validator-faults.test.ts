import { describe, expect, it } from 'vitest';
import { inputSchemaFault } from './validator-faults.js';

function chain(n: number): Record<string, unknown> {
  return { type: 'object', properties: { a: { $ref: '#/$defs/0' } }, $defs: [...Array.from({ length: n }, (_, i) => ({ $ref: `#/$defs/${i + 1}` })), { type: 'string' }] };
}

describe('inputSchemaFault', () => {
  it('finds nothing in ordinary and recursive schemas', () => {
    expect(inputSchemaFault({ type: 'object', properties: { q: { type: 'string' } } })).toBeUndefined();
    expect(inputSchemaFault({ type: 'object', properties: { next: { $ref: '#' } } })).toBeUndefined();
    // The property's own $ref and 63 more: 64 in a row, as many as the validator follows.
    expect(inputSchemaFault(chain(63))).toBeUndefined();
    expect(inputSchemaFault({ anyOf: [{}, { $ref: '#' }] })).toBeUndefined();
    expect(inputSchemaFault(true)).toBeUndefined();
  });

  it('names a $ref cycle that consumes no input, by its pointer', () => {
    expect(inputSchemaFault({ $ref: '#' })).toBe('the input schema has a $ref cycle that consumes no input at /');
    expect(inputSchemaFault({ type: 'object', properties: { x: { $ref: '#/$defs/a' } }, $defs: { a: { $ref: '#/$defs/b' }, b: { allOf: [{ $ref: '#/$defs/a' }] } } })).toBe(
      'the input schema has a $ref cycle that consumes no input at /$defs/a',
    );
    expect(inputSchemaFault({ properties: { 'a/b': { not: { $ref: '#/properties/a~1b' } } } })).toBe('the input schema has a $ref cycle that consumes no input at /properties/a~1b');
  });

  it('names a chain of more $refs in a row than the validator follows', () => {
    expect(inputSchemaFault(chain(64))).toBe('the input schema chains more than 64 $refs in a row at /properties/a');
    expect(inputSchemaFault(chain(10_000))).toBe('the input schema chains more than 64 $refs in a row at /properties/a');
    expect(inputSchemaFault(chain(64), 100)).toBeUndefined();
  });
});
