import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

const keyring = 'k1:' + Buffer.alloc(32, 1).toString('base64');

describe('OUTBOUND_PROFILE', () => {
  it('is local or production; unset or empty is production', () => {
    expect(loadConfig('registry', { OUTBOUND_PROFILE: 'local' }).outbound.profile).toBe('local');
    expect(loadConfig('registry', { OUTBOUND_PROFILE: 'production', SECRETS_KEYRING: keyring }).outbound.profile).toBe(
      'production',
    );
    expect(loadConfig('registry', { SECRETS_KEYRING: keyring }).outbound.profile).toBe('production');
    expect(loadConfig('registry', { OUTBOUND_PROFILE: '', SECRETS_KEYRING: keyring }).outbound.profile).toBe(
      'production',
    );
  });

  it('refuses a mistyped profile instead of guessing', () => {
    expect(() => loadConfig('registry', { OUTBOUND_PROFILE: 'lcoal', SECRETS_KEYRING: keyring })).toThrow(
      'OUTBOUND_PROFILE must be local or production',
    );
  });
});

describe('HTTP_PORT', () => {
  it('unset or empty is the service default; 0 picks a free port', () => {
    const base = { OUTBOUND_PROFILE: 'local' };
    expect(loadConfig('registry', base).httpPort).toBe(8080);
    expect(loadConfig('registry', { ...base, HTTP_PORT: '' }).httpPort).toBe(8080);
    expect(loadConfig('registry', { ...base, HTTP_PORT: '0' }).httpPort).toBe(0);
    expect(() => loadConfig('registry', { ...base, HTTP_PORT: 'eighty' })).toThrow('HTTP_PORT must be a port number');
  });
});
