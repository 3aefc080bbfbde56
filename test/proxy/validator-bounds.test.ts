import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonObject } from '@mcpx/domain';
import { cborNestingExceeds, decodeCallRequest, parseCallRequest, MAX_CALL_TIMEOUT_MS } from '@mcpx/proxy';
import { encodePayload } from '@mcpx/contracts';

/** Hostile schemas and arguments: every case ends with an answer, bounded in work, never a hang or a crash. */
describe('the bounded validator on the proxy hot path', () => {
  it('compiles a schema nested 10,000 levels deep and refuses a value that follows it past the depth limit', () => {
    let schema: JsonObject = { type: 'string' };
    for (let i = 0; i < 10_000; i++) schema = { type: 'object', properties: { a: schema } };
    const validate = compileValidator(schema);
    let value: unknown = 'x';
    for (let i = 0; i < 40; i++) value = { a: value };
    const result = validate(value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors[0]?.keyword).toBe('depth');
  });

  it('handles an enum of 200,000 values and a schema with 200,000 properties', () => {
    const values = Array.from({ length: 200_000 }, (_, i) => `v${i}`);
    const e = compileValidator({ type: 'object', properties: { pick: { enum: values } } });
    expect(e({ pick: 'v199999' }).ok).toBe(true);
    const bad = e({ pick: 'nope' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors[0]?.message.length).toBeLessThan(300);
    const properties = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`p${i}`, { type: 'number' }]));
    expect(compileValidator({ type: 'object', properties })({ p5: 'x' }).ok).toBe(false);
  });

  it('stops at the node budget on a 200,000-item array, and at the size bound on a huge string', () => {
    const v = compileValidator({ type: 'object', properties: { xs: { type: 'array', items: { type: 'number' } } } });
    const many = v({ xs: Array.from({ length: 200_000 }, () => 1) });
    expect(many.ok).toBe(false);
    if (!many.ok) expect(many.errors[0]?.keyword).toBe('limit');
    const big = v({ s: 'x'.repeat(2 * 1024 * 1024) });
    expect(big.ok).toBe(false);
    if (!big.ok) expect(big.errors[0]?.keyword).toBe('size');
    const errors = compileValidator({ type: 'object', properties: { xs: { type: 'array', items: { type: 'string' } } } })({ xs: Array.from({ length: 5_000 }, () => 1) });
    expect(errors.ok).toBe(false);
    if (!errors.ok) expect(errors.errors.length).toBeLessThanOrEqual(20);
  });

  it('ignores keywords it does not model, unresolvable $refs and a non-object root', () => {
    expect(compileValidator({ type: 'object', anyOf: [{ required: ['a'] }, {}], $ref: '#/nope', pattern: '(a+)+$' })({}).ok).toBe(true);
    expect(compileValidator(true)({ anything: 1 }).ok).toBe(true);
  });
});

describe('call request decoding', () => {
  const base = { account: 'a', agent: 'b', run: 'r', callId: 'c', tool: 't', arguments: {} };

  it('clamps timeoutMs to the 120 s maximum', () => {
    expect(parseCallRequest({ ...base, timeoutMs: 600_000 }).timeoutMs).toBe(MAX_CALL_TIMEOUT_MS);
    expect(parseCallRequest({ ...base, timeoutMs: 1_500 }).timeoutMs).toBe(1_500);
    expect(parseCallRequest(base).timeoutMs).toBeUndefined();
  });

  it('finds deep CBOR nesting before decoding it, and lets ordinary requests through', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = { k: [deep] };
    expect(cborNestingExceeds(encodePayload({ ...base, arguments: { deep } }), 64)).toBe(true);
    expect(cborNestingExceeds(encodePayload({ ...base, arguments: { a: [1, { b: 'x', c: [true, null] }], s: 'y'.repeat(70_000) } }), 64)).toBe(false);
    expect(() => decodeCallRequest(encodePayload({ ...base, arguments: { deep } }))).toThrow(/nested deeper/);
    expect(decodeCallRequest(encodePayload(base))).toEqual(base);
  });
});
