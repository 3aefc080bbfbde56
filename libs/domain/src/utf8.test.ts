import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { boundText, codePointLength, truncateCodePoints, truncateUtf8, utf8ByteLength } from './utf8.js';

const encoder = new TextEncoder();

describe('utf8', () => {
  it('measures UTF-8 bytes like TextEncoder, lone surrogates included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(utf8ByteLength(s)).toBe(encoder.encode(s).length);
      }),
    );
    expect(utf8ByteLength('a😀é\ud800')).toBe(1 + 4 + 2 + 3);
  });

  it('cuts on a code point boundary, never past the budget, keeping the longest prefix', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.nat(40), (s, max) => {
        const cut = truncateUtf8(s, max);
        expect(s.startsWith(cut)).toBe(true);
        expect(utf8ByteLength(cut)).toBeLessThanOrEqual(max);
        // No split surrogate pair at the end.
        expect(encoder.encode(cut).length).toBe(utf8ByteLength(cut));
        if (cut.length < s.length) {
          const next = String.fromCodePoint(s.codePointAt(cut.length)!);
          expect(utf8ByteLength(cut + next)).toBeGreaterThan(max);
        }
      }),
    );
    expect(truncateUtf8('a😀b', 4)).toBe('a');
    expect(truncateUtf8('a😀b', 5)).toBe('a😀');
  });

  it('counts and cuts code points', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.nat(20), (s, n) => {
        expect(codePointLength(s)).toBe([...s].length);
        expect(truncateCodePoints(s, n)).toBe([...s].slice(0, n).join(''));
      }),
    );
  });

  it('bounds text with an ellipsis only when it is cut', () => {
    expect(boundText('hello', 5)).toBe('hello');
    expect(boundText('hello world', 8)).toBe('hello…');
    expect(utf8ByteLength(boundText('é'.repeat(100), 11))).toBeLessThanOrEqual(11);
  });
});
