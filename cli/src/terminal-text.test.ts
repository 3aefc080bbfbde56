import { describe, expect, it } from 'vitest';
import { terminalText, toolCount } from './terminal-text.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('terminalText', () => {
  it('makes escape sequences inert and visible: their introducers are shown as code points', () => {
    expect(terminalText('a\u001b]0;evil\u0007b')).toBe('a<U+001B>]0;evil<U+0007>b');
    expect(terminalText('\u001b[2Jclear\u001b[1;31mred')).toBe('<U+001B>[2Jclear<U+001B>[1;31mred');
    expect(terminalText('x\u009b2Jy\u009d0;t\u009cz')).toBe('x<U+009B>2Jy<U+009D>0;t<U+009C>z');
  });

  it('shows bidi controls and zero-width characters; keeps newlines, tabs and other text as they are', () => {
    expect(terminalText('invoice\u202Efdp.exe\u200B')).toBe('invoice<U+202E>fdp.exe<U+200B>');
    expect(terminalText('line 1\n\tline 2\r end')).toBe('line 1\n\tline 2<U+000D> end');
    expect(terminalText('héllo — 日本 🙂 "quoted" \\u001b')).toBe('héllo — 日本 🙂 "quoted" \\u001b');
  });

  it('leaves no control character whatever it is given', () => {
    let all = '';
    for (let c = 0; c < 0x100; c++) all += String.fromCharCode(c) + 'x';
    const out = terminalText(all + '\u001b');
    expect(out.replace(/[\n\t]/g, '')).not.toMatch(CONTROL);
    expect(out).toContain('\n');
    expect(out).toContain('\t');
  });

  it('counts tools in English: 0 tools, 1 tool, 2 tools', () => {
    expect([0, 1, 2, 16].map(toolCount)).toEqual(['0 tools', '1 tool', '2 tools', '16 tools']);
  });
});
