import { describe, expect, it } from 'vitest';
import { displayText } from './display-text.js';

describe('displayText', () => {
  it('shows bidi controls as their code points, so a name reads as it is', () => {
    expect(displayText('invoice\u202Efdp.exe')).toBe('invoice<U+202E>fdp.exe');
    for (const c of [0x200e, 0x200f, 0x061c, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]) {
      expect(displayText(`a${String.fromCodePoint(c)}b`)).toBe(
        `a<U+${c.toString(16).toUpperCase().padStart(4, '0')}>b`,
      );
    }
  });

  it('shows zero-width and other invisible characters, tags included', () => {
    expect(displayText('a\u200Bb\u200Cc\u200Dd\u2060e\uFEFFf\u00ADg')).toBe(
      'a<U+200B>b<U+200C>c<U+200D>d<U+2060>e<U+FEFF>f<U+00AD>g',
    );
    expect(displayText('x\u{E0041}\u{E007F}y')).toBe('x<U+E0041><U+E007F>y');
    expect(displayText('one\u2028two')).toBe('one<U+2028>two');
  });

  it('shows every C0 control but newline and tab, DEL and C1, so no escape sequence reaches a terminal', () => {
    expect(displayText('a\u001b]0;evil\u0007b')).toBe('a<U+001B>]0;evil<U+0007>b');
    expect(displayText('\u001b[2Jx\r\u0000\u007f\u0085\u009b2J')).toBe(
      '<U+001B>[2Jx<U+000D><U+0000><U+007F><U+0085><U+009B>2J',
    );
    let all = '';
    for (let c = 0; c < 0x100; c++) all += String.fromCharCode(c);
    // eslint-disable-next-line no-control-regex
    expect(displayText(all).replace(/[\n\t]/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('keeps everything else as it is', () => {
    const plain = 'héllo — 日本 🙂 👩🏽‍💻 "quoted" \\u202E\nline 2\tcol ❤️ مرحبا';
    // The emoji's joiner (U+200D) is shown: a joiner is invisible wherever it is put.
    expect(displayText(plain)).toBe(plain.replace('\u200D', '<U+200D>'));
    expect(displayText('')).toBe('');
  });
});
