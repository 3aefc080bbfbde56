import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { OAuthTickets, readCookie } from './browser-binding.js';

/** The cookie's text only: no Redis is reached. */
const tickets = (publicUrl: string): OAuthTickets =>
  new OAuthTickets({} as Redis, 'p:', {
    startUrl: () => `${publicUrl}/v1/oauth/start`,
    secureCookie: () => publicUrl.startsWith('https:'),
  });

describe('the binding cookie', () => {
  it('is HttpOnly, SameSite=Lax, on the OAuth path only, Secure behind https', () => {
    expect(tickets('http://127.0.0.1:8080').setCookie('ab'.repeat(32), 'v')).toBe(
      `mcpx_oauth_${'ab'.repeat(8)}=v; Path=/v1/oauth; Max-Age=900; HttpOnly; SameSite=Lax`,
    );
    expect(tickets('https://mcpx.example').setCookie('ab'.repeat(32), 'v')).toMatch(
      /; HttpOnly; SameSite=Lax; Secure$/,
    );
  });

  it('follows a public URL with a path (a registry behind a reverse proxy at a prefix)', () => {
    const behind = tickets('https://example.com/mcpx');
    expect(behind.cookiePath()).toBe('/mcpx/v1/oauth');
    expect(behind.setCookie('cd'.repeat(32), 'v')).toContain('; Path=/mcpx/v1/oauth;');
    expect(behind.clearCookie('some-state')).toMatch(/; Path=\/mcpx\/v1\/oauth; Max-Age=0;/);
  });

  it('is read by exact name from a Cookie header', () => {
    expect(readCookie('a=1; mcpx_oauth_x=2;b=3', 'mcpx_oauth_x')).toBe('2');
    expect(readCookie('xmcpx_oauth_x=2', 'mcpx_oauth_x')).toBeUndefined();
    expect(readCookie(undefined, 'a')).toBeUndefined();
    expect(readCookie('garbage', 'a')).toBeUndefined();
  });
});
