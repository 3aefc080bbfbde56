import { loadConfig } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { SecretBox } from '@mcpx/secrets';
import { McpServersRepository } from './catalog/mcp-servers.repository.js';
import { bindUnboundSecrets } from './credentials/secret-binding.js';
import { rotateSealedValues } from './credentials/secrets-rotation.js';

/**
 * The key-ring rotation command: re-seals every value an older key sealed (account secrets, OAuth
 * client state and tokens, vendor tokens) under the newest key of `SECRETS_KEYRING` (the last
 * entry). Run it after adding a key to the ring and rolling the services onto it; once it reports
 * 0 left, the old key may leave the ring. Account secrets sealed before origins were recorded are
 * first bound to their server's origin. Idempotent, safe while the services run (a value is
 * re-sealed only if it has not changed since it was read). Prints two JSON lines:
 * `{originBinding: {bound, left}}`, then `{rotated, keyId, left, tables: {<table>: {rotated, left}}}`.
 *
 *   SECRETS_KEYRING=old:…,new:… DATABASE_URL=… pnpm --filter @mcpx/registry rotate-secrets
 */
async function main(): Promise<void> {
  const config = loadConfig('registry', process.env);
  const db = createDb(config.databaseUrl, { applicationName: 'rotate-secrets', max: 2 });
  try {
    await migrate(db, 'registry');
    const box = new SecretBox(config.keyring);
    // Secrets sealed before origins were recorded are bound to their server's origin first (and
    // so re-sealed under the newest key); an unbound one opens for nobody.
    const origins = await bindUnboundSecrets(db, box, new McpServersRepository(db));
    const report = await rotateSealedValues(db, box);
    process.stdout.write(`${JSON.stringify({ originBinding: origins })}\n${JSON.stringify(report)}\n`);
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  // Messages of the key ring, SecretBox and the rotation name key ids and rows only, never material.
  process.stderr.write(`rotate-secrets failed: ${(err as Error).message}\n`);
  process.exit(1);
});
