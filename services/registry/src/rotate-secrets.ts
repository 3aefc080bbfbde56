import { loadConfig } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { SecretBox } from '@mcpx/secrets';
import { SecretsRepository } from './repositories/secrets.repository.js';

/**
 * The key-ring rotation command: re-seals every account secret that an older key sealed under
 * the newest key of `SECRETS_KEYRING` (the last entry). Run it after adding a key to the ring and
 * rolling the services onto it; once it reports 0 left, the old key may leave the ring.
 * Idempotent, safe while the services run (each row is re-sealed only if its key id is unchanged).
 *
 *   SECRETS_KEYRING=old:…,new:… DATABASE_URL=… pnpm --filter @mcpx/registry rotate-secrets
 */
async function main(): Promise<void> {
  const config = loadConfig('registry', process.env);
  const db = createDb(config.databaseUrl, { applicationName: 'rotate-secrets', max: 2 });
  try {
    await migrate(db, 'registry');
    const box = new SecretBox(config.keyring);
    const rotated = await new SecretsRepository(db, box).rotate();
    const left = await db
      .selectFrom('registry.secrets')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('key_id', '!=', box.currentKeyId)
      .executeTakeFirstOrThrow();
    process.stdout.write(`${JSON.stringify({ rotated, keyId: box.currentKeyId, left: Number(left.n) })}\n`);
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  // Messages of the key ring and of SecretBox name key ids only, never material.
  process.stderr.write(`rotate-secrets failed: ${(err as Error).message}\n`);
  process.exit(1);
});
