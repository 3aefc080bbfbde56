import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { TrustedProxies } from './trusted-proxies.js';

const req = (peer: string, xff?: string | string[]): IncomingMessage =>
  ({
    socket: { remoteAddress: peer },
    headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
  }) as unknown as IncomingMessage;

describe('TrustedProxies', () => {
  it('none by default: the socket peer, whatever the header says', () => {
    const none = TrustedProxies.fromEnv(undefined);
    expect(none.clientAddress(req('10.0.0.5', '1.2.3.4'))).toBe('10.0.0.5');
    expect(none.clientAddress(req('::ffff:127.0.0.1', '1.2.3.4'))).toBe('127.0.0.1');
    expect(TrustedProxies.fromEnv('').size).toBe(0);
  });

  it('a trusted peer: the rightmost address that is not a trusted proxy; what a client prepends is never reached', () => {
    const trusted = TrustedProxies.fromEnv('10.0.0.0/8, 192.168.1.7 ,fd00::/8');
    expect(trusted.size).toBe(3);
    expect(trusted.clientAddress(req('10.1.2.3', '203.0.113.9'))).toBe('203.0.113.9');
    expect(trusted.clientAddress(req('10.1.2.3', 'forged, 198.51.100.1, 203.0.113.9, 10.9.9.9'))).toBe('203.0.113.9');
    expect(trusted.clientAddress(req('10.1.2.3', ['198.51.100.1', '203.0.113.9']))).toBe('203.0.113.9');
    expect(trusted.clientAddress(req('::ffff:192.168.1.7', '2001:db8::1'))).toBe('2001:db8::1');
    expect(trusted.clientAddress(req('fd12::1', '[2001:db8::2]'))).toBe('2001:db8::2');
    // Every hop trusted: the leftmost one.
    expect(trusted.clientAddress(req('10.1.2.3', '10.4.4.4, 10.5.5.5'))).toBe('10.4.4.4');
    // No header, or garbage in it: the last address known.
    expect(trusted.clientAddress(req('10.1.2.3'))).toBe('10.1.2.3');
    expect(trusted.clientAddress(req('10.1.2.3', 'not-an-ip'))).toBe('10.1.2.3');
    expect(trusted.clientAddress(req('10.1.2.3', '203.0.113.9, junk, 10.2.2.2'))).toBe('10.2.2.2');
    // An untrusted peer's header is not read.
    expect(trusted.clientAddress(req('203.0.113.50', '10.1.1.1'))).toBe('203.0.113.50');
  });

  it('a malformed entry is refused naming the variable', () => {
    for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '::/129', '1.2.3.4/-1', '1.2.3.4/ 8']) {
      expect(() => TrustedProxies.fromEnv(bad), bad).toThrow(/TRUSTED_PROXIES/);
    }
  });
});
