/**
 * Attack: a deployment that kept the development key ring seals every owner's tokens with a key
 * published in the source.
 * Outside the local profile each service refuses to start with it — under its own id or any other,
 * alone or beside a real key — naming the setting and printing no key material.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../support/cli.js';
import { ROOT } from '../support/system.js';

/** The key the local profile (npm start) uses when SECRETS_KEYRING is unset: 32 bytes of 7. */
const DEV_KEY = Buffer.alloc(32, 7).toString('base64');
const OWN_KEY = Buffer.alloc(32, 0x5a).toString('base64');

function startService(name: string, env: Record<string, string>): ReturnType<typeof runCommand> {
  // Ports nobody listens on: a service that got past its configuration would fail on them instead.
  return runCommand(process.execPath, ['--import', 'tsx', join(ROOT, 'services', name, 'src', 'main.ts')], {
    DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
    NATS_URL: 'nats://127.0.0.1:1',
    REDIS_URL: 'redis://127.0.0.1:1',
    HTTP_PORT: '0',
    ...env,
  });
}

describe('the development key ring outside the local profile', () => {
  it.each(['registry', 'projector', 'proxy'])(
    'the %s refuses to start with it, naming SECRETS_KEYRING and no key',
    async (name) => {
      // The subtle case, the published key kept as an old entry beside a real one (the other
      // spellings are in libs/config's unit test): each process is a few seconds to start.
      const keyring = name === 'registry' ? `dev:${DEV_KEY}` : `old:${DEV_KEY},new:${OWN_KEY}`;
      const result = await startService(name, { OUTBOUND_PROFILE: 'production', SECRETS_KEYRING: keyring });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain(`${name} failed to start: SECRETS_KEYRING entry`);
      expect(result.stderr).toContain('development key');
      const output = result.stdout + result.stderr;
      expect(output).not.toContain(DEV_KEY.slice(0, 16));
      expect(output).not.toContain(OWN_KEY.slice(0, 16));
    },
  );

  it('a production registry with a key of its own gets past its configuration (and fails on the missing database instead)', async () => {
    const result = await startService('registry', {
      OUTBOUND_PROFILE: 'production',
      SECRETS_KEYRING: `prod:${OWN_KEY}`,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('registry failed to start');
    expect(result.stderr).not.toContain('SECRETS_KEYRING');
  });
});
