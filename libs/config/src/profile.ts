import { timingSafeEqual } from 'node:crypto';
import { ConfigError } from './config-error.js';

/** The outbound/deployment profile: `local` is a developer's machine, anything else is not. */
export type Profile = 'local' | 'production';

/**
 * Reads `OUTBOUND_PROFILE`: only the exact value `local` selects `local`; unset or empty is
 * `production`; anything else is refused rather than guessed.
 */
export function parseProfile(env: NodeJS.ProcessEnv): Profile {
  const given = env.OUTBOUND_PROFILE;
  if (given !== undefined && given !== '' && given !== 'local' && given !== 'production') {
    throw new ConfigError('OUTBOUND_PROFILE', 'OUTBOUND_PROFILE must be local or production');
  }
  return given === 'local' ? 'local' : 'production';
}

/**
 * The key the `local` profile seals with when `SECRETS_KEYRING` is unset (what `npm start` runs
 * with). It is in the source, so it protects nothing: fine on a developer's machine, never elsewhere.
 */
const LOCAL_DEV_KEY = Buffer.alloc(32, 7);

/** The key ring the `local` profile uses when `SECRETS_KEYRING` is unset. */
export const LOCAL_DEV_KEYRING = 'dev:' + LOCAL_DEV_KEY.toString('base64');

/**
 * Keys published with the project: the local profile's default, which earlier versions of the
 * compose file also used as their fallback. A key ring holding any of them, under any id, seals
 * (or can unseal) secrets with a key everyone has.
 */
const KNOWN_DEVELOPMENT_KEYS: readonly Buffer[] = [LOCAL_DEV_KEY];

/** Whether `key` is one of the keys published with the project. */
export function isDevelopmentKey(key: Buffer): boolean {
  return KNOWN_DEVELOPMENT_KEYS.some((dev) => dev.length === key.length && timingSafeEqual(dev, key));
}

/**
 * Outside the `local` profile a key ring may hold no development key, in any position: a
 * ciphertext sealed under a published key is readable, and forgeable, by anyone with the database.
 * Throws a {@link ConfigError} naming `SECRETS_KEYRING` and the entry's id, never key material.
 * (To rotate away from the development key, run `rotate-secrets` once under the local profile.)
 */
export function refuseDevelopmentKeys(profile: Profile, keyring: readonly { id: string; key: Buffer }[]): void {
  if (profile === 'local') return;
  const dev = keyring.find((entry) => isDevelopmentKey(entry.key));
  if (dev !== undefined) {
    throw new ConfigError(
      'SECRETS_KEYRING',
      `SECRETS_KEYRING entry ${dev.id} is the published development key, refused outside the local profile (OUTBOUND_PROFILE=${profile}); generate your own: id:$(openssl rand -base64 32)`,
    );
  }
}
