import { describe, expect, it } from 'vitest';
import { terminalText, toolCount } from './terminal-text.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('terminalText', () => {
  it('removes whole escape sequences and keeps the text around them', () => {
    expect(terminalText('a\u001b]0;evil\u0007b')).toBe('ab');
    expect(terminalText('a\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\b')).toBe('alinkb');
    expect(terminalText('\u001b[2Jclear\u001b[1;31mred\u001b[0m')).toBe('clearred');
    expect(terminalText('x\u009b2Jy\u009d0;t\u009cz')).toBe('xyz');
    expect(terminalText('\u001bPq#0;2;0;0;0\u001b\\done')).toBe('done');
    expect(terminalText('\u001bcreset\u001b(Bcharset\u001b7saved')).toBe('resetcharsetsaved');
  });

  it('removes every C0 control but newline and tab, DEL and C1; keeps other text as it is', () => {
    expect(terminalText('line 1\n\tline 2\r\u0000\u0008\u007f\u0085\u009f end')).toBe('line 1\n\tline 2 end');
    expect(terminalText('héllo — 日本 🙂 "quoted" \\u001b')).toBe('héllo — 日本 🙂 "quoted" \\u001b');
  });

  it('leaves no control character whatever it is given, and an unterminated string command only loses its introducer', () => {
    expect(terminalText('a\u001b]0;no end')).toBe('a0;no end');
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
