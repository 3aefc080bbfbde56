import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { ConfigError } from './config-error.js';
import { LOCAL_DEV_KEYRING } from './profile.js';

const devKey = LOCAL_DEV_KEYRING.slice(LOCAL_DEV_KEYRING.indexOf(':') + 1);
const ownKey = 'k1:' + Buffer.alloc(32, 1).toString('base64');

/** The thrown error, so that its fields and its message can be checked. */
function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('the development key outside the local profile', () => {
  it('is what the local profile seals with when SECRETS_KEYRING is unset', () => {
    const config = loadConfig('registry', { OUTBOUND_PROFILE: 'local' });
    expect(config.keyring.map((k) => k.key.toString('base64'))).toEqual([devKey]);
  });

  it.each(['registry', 'projector', 'proxy'] as const)(
    'is refused by the %s in production, under any id and in any position, naming the setting and no key material',
    (service) => {
      for (const keyring of [
        LOCAL_DEV_KEYRING,
        `mine:${devKey}`,
        `${ownKey},later:${devKey}`,
        `old:${devKey},${ownKey}`,
      ]) {
        for (const profile of [{ OUTBOUND_PROFILE: 'production' }, {}]) {
          const err = refusal(() => loadConfig(service, { ...profile, SECRETS_KEYRING: keyring }));
          expect(err.code).toBe('invalid_config');
          expect(err.setting).toBe('SECRETS_KEYRING');
          expect(err.message).toContain('SECRETS_KEYRING');
          expect(err.message).toContain('development key');
          expect(err.message).not.toContain(devKey);
          expect(err.message).not.toContain(devKey.slice(0, 12));
          expect(err.message).not.toContain(ownKey.slice(3, 15));
        }
      }
    },
  );

  it('is still accepted under the local profile (npm start), and a key of your own is accepted in production', () => {
    expect(
      loadConfig('registry', { OUTBOUND_PROFILE: 'local', SECRETS_KEYRING: LOCAL_DEV_KEYRING }).keyring,
    ).toHaveLength(1);
    expect(loadConfig('registry', { OUTBOUND_PROFILE: 'production', SECRETS_KEYRING: ownKey }).keyring[0]?.id).toBe(
      'k1',
    );
  });

  it('a key that differs from the development key in one byte is not mistaken for it', () => {
    const near = Buffer.alloc(32, 7);
    near[31] = 8;
    expect(loadConfig('proxy', { SECRETS_KEYRING: `near:${near.toString('base64')}` }).keyring[0]?.id).toBe('near');
  });
});

describe('OUTBOUND_PROFILE errors are typed', () => {
  it('a mistyped profile names the setting', () => {
    const err = refusal(() => loadConfig('registry', { OUTBOUND_PROFILE: 'prod', SECRETS_KEYRING: ownKey }));
    expect(err.setting).toBe('OUTBOUND_PROFILE');
  });
});
