import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

const keyring = 'k1:' + Buffer.alloc(32, 1).toString('base64');

describe('OUTBOUND_PROFILE', () => {
  it('is local or production; unset or empty is production', () => {
    expect(loadConfig('registry', { OUTBOUND_PROFILE: 'local' }).outbound.profile).toBe('local');
    expect(loadConfig('registry', { OUTBOUND_PROFILE: 'production', SECRETS_KEYRING: keyring }).outbound.profile).toBe('production');
    expect(loadConfig('registry', { SECRETS_KEYRING: keyring }).outbound.profile).toBe('production');
    expect(loadConfig('registry', { OUTBOUND_PROFILE: '', SECRETS_KEYRING: keyring }).outbound.profile).toBe('production');
  });

  it('refuses a mistyped profile instead of guessing', () => {
    expect(() => loadConfig('registry', { OUTBOUND_PROFILE: 'lcoal', SECRETS_KEYRING: keyring })).toThrow('OUTBOUND_PROFILE must be local or production');
  });
});
