import { describe, expect, it } from 'vitest';
import { authContextOf } from './auth-context.js';

describe('authContextOf', () => {
  it('is the same whatever the header names’ case and order, and 64 hex digits', () => {
    const a = authContextOf('https://x.example/mcp', { Authorization: 'Bearer s3cret', 'X-Team': 'a' });
    const b = authContextOf('https://x.example/mcp', { 'x-team': 'a', authorization: 'Bearer s3cret' });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toContain('s3cret');
  });

  it('differs for another credential, another header or another URL', () => {
    const base = authContextOf('https://x.example/mcp', { authorization: 'Bearer one' });
    expect(authContextOf('https://x.example/mcp', { authorization: 'Bearer two' })).not.toBe(base);
    expect(authContextOf('https://x.example/mcp', { authorization: 'Bearer one', 'x-extra': '' })).not.toBe(base);
    expect(authContextOf('https://x.example/other', { authorization: 'Bearer one' })).not.toBe(base);
    expect(authContextOf('https://x.example/mcp', {})).not.toBe(base);
  });
});
