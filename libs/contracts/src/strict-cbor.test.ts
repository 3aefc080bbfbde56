import { describe, expect, it } from 'vitest';
import { decodePayload, decodeStrict, encodePayload } from './codec.js';
import { WireError } from './errors.js';
import { BODY_LIMITS, StrictRules, type StrictLimits } from './strict-cbor.js';
import { checkValueBounds } from './value-bounds.js';
import { sharedValueBomb } from './hostile-cbor.test-support.js';

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));

/** The refusal of `bytes`: an invalid_input naming the field, with its rule. */
function refusal(bytes: Uint8Array, limits?: StrictLimits): { field: unknown; rule: unknown; message: string } {
  try {
    decodeStrict(bytes, 'payload', limits);
  } catch (e) {
    expect(e).toBeInstanceOf(WireError);
    const w = e as WireError;
    expect(w.code).toBe('invalid_input');
    return { field: w.details.field, rule: w.details.rule, message: w.message };
  }
  throw new Error('expected a refusal');
}

describe('decodeStrict', () => {
  it('decodes what encodePayload writes, the shapes the services send included', () => {
    const values: unknown[] = [
      {
        ok: true,
        value: {
          n: 1,
          f: 1.5,
          big: 1_764_000_000_000,
          neg: -7,
          s: 'héllo ✓',
          b: new Uint8Array([1, 2]),
          none: null,
          arr: [true, false],
        },
      },
      { ok: false, error: { code: 'not_found', message: 'no', details: { field: 'x' } } },
      [],
      {},
      'text',
      0,
      -1.25,
      Array.from({ length: 300 }, (_, i) => ({ [`k${i}`]: i })),
    ];
    // The same value the lenient decoder gives (byte strings come back as Buffers in Node).
    for (const v of values) expect(decodeStrict(encodePayload(v), 'payload')).toEqual(decodePayload(encodePayload(v)));
    expect(decodeStrict(encodePayload(values[0]), 'payload')).toMatchObject({
      ok: true,
      value: { big: 1_764_000_000_000, s: 'héllo ✓' },
    });
  });

  it('reads a property set to undefined as absent, and an undefined element as null', () => {
    const bytes = encodePayload({
      ok: true,
      value: undefined,
      nested: { a: undefined, b: [1, undefined, { c: undefined }] },
    });
    expect(decodeStrict(bytes, 'payload')).toEqual({ ok: true, nested: { b: [1, null, {}] } });
    expect(Object.keys(decodeStrict<Record<string, unknown>>(bytes, 'payload'))).toEqual(['ok', 'nested']);
    // A map with many fields (a 16-bit count) keeps its other entries.
    const wide = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, i % 3 === 0 ? undefined : i]));
    expect(decodeStrict(encodePayload(wide), 'payload')).toEqual(JSON.parse(JSON.stringify(wide)));
  });

  it('writes a lone surrogate as U+FFFD, in short and long strings alike, so it decodes', () => {
    const cases: Array<[string, string]> = [
      ['\ud800', '\ufffd'],
      ['a\udc00b', 'a\ufffdb'],
      [`${'x'.repeat(5000)}\ud800`, `${'x'.repeat(5000)}\ufffd`],
      ['pair 😀 kept', 'pair 😀 kept'],
    ];
    for (const [s, expected] of cases)
      expect(decodeStrict<{ s: string }>(encodePayload({ s, n: undefined }), 'payload').s).toBe(expected);
  });

  it('refuses the shared-value bomb at its first tag, whatever its depth', () => {
    for (const levels of [1, 40, 5_000]) {
      expect(refusal(sharedValueBomb(levels))).toMatchObject({ field: 'payload', rule: StrictRules.tag });
    }
    // cbor-x alone would build the shared graph: that is what the scan keeps away.
    expect(refusal(sharedValueBomb(40)).message).toMatch(/^payload: tag 28 is not allowed/);
  });

  it.each([
    ['empty', '', StrictRules.empty],
    ['an indefinite-length array', '9f 01 ff', StrictRules.indefiniteLength],
    ['an indefinite-length map', 'bf 61 61 01 ff', StrictRules.indefiniteLength],
    ['an indefinite-length text', '7f 61 61 ff', StrictRules.indefiniteLength],
    ['a lone break', 'ff', StrictRules.indefiniteLength],
    ['a date tag', 'c1 1a 00 00 00 01', StrictRules.tag],
    ['a bignum tag', 'c2 41 01', StrictRules.tag],
    ['tag 42 written long', 'd9 00 2a 42 00 01', StrictRules.tag],
    ['tag 42 over a text', 'd8 2a 61 61', StrictRules.tag],
    ['tag 42 without the 0x00 prefix', 'd8 2a 42 01 02', StrictRules.tag],
    ['undefined', 'f7', StrictRules.simpleValue],
    ['simple value 16', 'f0', StrictRules.simpleValue],
    ['simple value 255 (one byte)', 'f8 ff', StrictRules.simpleValue],
    ['a half float', 'f9 3c 00', StrictRules.float],
    ['a single float', 'fa 3f 80 00 00', StrictRules.float],
    ['NaN', 'fb 7f f8 00 00 00 00 00 00', StrictRules.float],
    ['infinity', 'fb 7f f0 00 00 00 00 00 00', StrictRules.float],
    ['an integer past 2^53', '1b 00 20 00 00 00 00 00 00', StrictRules.integerRange],
    ['an integer map key', 'a1 01 02', StrictRules.mapKey],
    ['an array map key', 'a1 80 02', StrictRules.mapKey],
    ['a duplicate key', 'a2 61 61 01 61 61 02', StrictRules.duplicateKey],
    ['a duplicate third key', 'a3 61 61 01 61 62 02 61 61 03', StrictRules.duplicateKey],
    ['invalid UTF-8', '62 c3 28', StrictRules.utf8],
    ['an overlong encoding', '62 c0 af', StrictRules.utf8],
    ['a surrogate', '63 ed a0 80', StrictRules.utf8],
    ['a huge declared byte string', '5b 00 00 00 ff ff ff ff ff 00', StrictRules.truncated],
    ['a huge declared array', '9b 00 00 00 ff ff ff ff ff 00', StrictRules.truncated],
    ['a huge declared map', 'ba ff ff ff ff 00', StrictRules.truncated],
    ['a text cut short', '65 61 62', StrictRules.truncated],
    ['a head cut short', '19 01', StrictRules.truncated],
    ['an array missing items', '83 01 02', StrictRules.truncated],
    ['reserved additional information', '1c', StrictRules.reserved],
    ['trailing bytes', '01 02', StrictRules.trailingBytes],
  ])('refuses %s', (_what, bytes, rule) => {
    const r = refusal(hex(bytes));
    expect(r).toMatchObject({ field: 'payload', rule });
    expect(r.message).toMatch(/^payload: /);
  });

  it('accepts a CID (tag 42 over a 0x00-led byte string)', () => {
    const v = decodeStrict<{ tag: number }>(hex('d8 2a 45 00 01 71 12 00'), 'payload');
    expect(v.tag).toBe(42);
  });

  it('bounds depth without recursing: 100,000 nested arrays are refused', () => {
    const deep = new Uint8Array(100_001).fill(0x81);
    deep[100_000] = 0x00;
    expect(refusal(deep)).toMatchObject({ rule: StrictRules.depth });
    const nested = (levels: number): Uint8Array => {
      const b = new Uint8Array(levels + 1).fill(0x81);
      b[levels] = 0x00;
      return b;
    };
    expect(refusal(nested(321))).toMatchObject({ rule: StrictRules.depth });
    expect(decodeStrict(nested(320), 'payload')).toBeInstanceOf(Array);
  });

  it('bounds bytes and items', () => {
    const limits: StrictLimits = { maxBytes: 64, maxDepth: 8, maxItems: 10 };
    expect(refusal(encodePayload('x'.repeat(100)), limits)).toMatchObject({ rule: StrictRules.size });
    expect(refusal(encodePayload([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), limits)).toMatchObject({ rule: StrictRules.items });
    expect(decodeStrict(encodePayload([1, 2, 3, 4, 5, 6, 7, 8, 9]), 'payload', limits)).toHaveLength(9);
  });

  it('keeps decodePayload for the bytes the services stored themselves', () => {
    expect(decodePayload(encodePayload({ a: 1 }))).toEqual({ a: 1 });
  });

  /** A map of `keys` (text keys, in order), each to the integer 1, written by hand (cbor-x would drop a duplicate). */
  const mapOf = (keys: string[]): Uint8Array => {
    const parts: number[] = keys.length < 24 ? [0xa0 + keys.length] : [0xb8, keys.length];
    for (const k of keys) {
      const b = Buffer.from(k, 'utf8');
      parts.push(...(b.length < 24 ? [0x60 + b.length] : [0x78, b.length]), ...b, 0x01);
    }
    return Uint8Array.from(parts);
  };

  it('finds a duplicate key in a map of any width, whichever keys are alike, and passes keys that only look alike', () => {
    const many = Array.from({ length: 40 }, (_, i) => `key-${i}`);
    expect(Object.keys(decodeStrict<Record<string, unknown>>(mapOf(many), 'payload'))).toHaveLength(40);
    // Before the map is wide, when it becomes wide, and long after.
    for (const [at, again] of [
      [2, 5],
      [3, 16],
      [0, 17],
      [30, 39],
    ] as const) {
      const keys = [...many];
      keys[again] = keys[at]!;
      expect(refusal(mapOf(keys))).toMatchObject({ field: 'payload', rule: StrictRules.duplicateKey });
    }
    expect(refusal(mapOf(['é', 'e', 'é']))).toMatchObject({ rule: StrictRules.duplicateKey });
    // Same length and first bytes, or a prefix: different keys.
    expect(decodeStrict(mapOf(['ab', 'ac', 'a', 'abc', 'é', 'è']), 'payload')).toEqual({
      ab: 1,
      ac: 1,
      a: 1,
      abc: 1,
      é: 1,
      è: 1,
    });
    // The same key in two maps, one inside the other or side by side, is no duplicate.
    expect(decodeStrict(encodePayload({ a: { a: 1, b: { a: 2 } }, b: [{ a: 1 }, { a: 2 }] }), 'payload')).toEqual({
      a: { a: 1, b: { a: 2 } },
      b: [{ a: 1 }, { a: 2 }],
    });
    // `__proto__` is refused by name, short of it or past it is a key.
    expect(refusal(mapOf(['__proto__']))).toMatchObject({ rule: StrictRules.mapKey });
    expect(decodeStrict(mapOf(['__proto_', '__proto__x']), 'payload')).toEqual({ __proto_: 1, __proto__x: 1 });
  });

  it('checks UTF-8 as strictly in a long text as in a short one', () => {
    const text = (body: Buffer): Uint8Array =>
      Uint8Array.from([...(body.length < 24 ? [0x60 + body.length] : [0x78, body.length]), ...body]);
    for (const bad of ['c328', 'c0af', 'eda080', 'f4908080', 'e282', 'ff']) {
      for (const pad of [0, 100]) {
        const body = Buffer.concat([Buffer.alloc(pad, 0x61), Buffer.from(bad, 'hex'), Buffer.alloc(pad ? 3 : 0, 0x61)]);
        expect(refusal(text(body))).toMatchObject({ rule: StrictRules.utf8 });
      }
    }
    const good = `${'a'.repeat(60)}é✓😀`;
    expect(decodeStrict(text(Buffer.from(good)), 'payload')).toBe(good);
    expect(decodeStrict(text(Buffer.from('é✓😀')), 'payload')).toBe('é✓😀');
  });

  it('reads 2, 4 and 8-byte heads as numbers, and refuses every NaN and infinity but passes the largest finite floats', () => {
    expect(decodeStrict(hex('19 01 00'), 'payload')).toBe(256);
    expect(decodeStrict(hex('1a ff ff ff ff'), 'payload')).toBe(0xffff_ffff);
    expect(decodeStrict(hex('1b 00 1f ff ff ff ff ff ff'), 'payload')).toBe(Number.MAX_SAFE_INTEGER);
    expect(decodeStrict(hex('3a 80 00 00 00'), 'payload')).toBe(-0x8000_0001);
    // A number, never a BigInt, from an 8-byte head (another runtime's encoder writes one from 2^32).
    expect(decodeStrict(hex('3b 00 00 01 00 00 00 00 00'), 'payload')).toBe(-(2 ** 40) - 1);
    expect(decodeStrict(hex('1b 00 00 00 00 00 00 00 05'), 'payload')).toBe(5);
    expect(decodeStrict(hex('79 00 02 61 62'), 'payload')).toBe('ab');
    expect(decodeStrict(hex('9a 00 00 00 01 00'), 'payload')).toEqual([0]);
    expect(decodeStrict(hex('fb 7f ef ff ff ff ff ff ff'), 'payload')).toBe(Number.MAX_VALUE);
    expect(decodeStrict(hex('fb ff ef ff ff ff ff ff ff'), 'payload')).toBe(-Number.MAX_VALUE);
    for (const bad of ['fb ff f0 00 00 00 00 00 00', 'fb ff f8 00 00 00 00 00 00', 'fb 7f f0 00 00 00 00 00 01'])
      expect(refusal(hex(bad))).toMatchObject({ rule: StrictRules.float });
  });
});

describe('checkValueBounds', () => {
  it('refuses a parsed JSON value past the depth or item bounds, and passes others', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(() => checkValueBounds(deep, 'body', BODY_LIMITS)).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        details: expect.objectContaining({ field: 'body', rule: 'depth' }),
      }),
    );
    expect(() => checkValueBounds({ a: Array(20).fill(0) }, 'body', { maxDepth: 8, maxItems: 10 })).toThrow(
      /more than 10 items/,
    );
    expect(() => checkValueBounds({ a: [1, { b: 'c' }] }, 'body', BODY_LIMITS)).not.toThrow();
    // A byte string is one item, whatever its length.
    expect(() => checkValueBounds({ b: new Uint8Array(1_000_000) }, 'body', BODY_LIMITS)).not.toThrow();
  });

  it('stops early on a value with shared references (bounded work, not the expansion)', () => {
    let v: unknown = 0;
    for (let i = 0; i < 60; i++) v = [v, v];
    expect(() => checkValueBounds(v, 'body', BODY_LIMITS)).toThrow(/more than/);
  });
});
