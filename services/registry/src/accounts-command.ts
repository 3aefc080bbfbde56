import { loadConfig } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { publicKeyFromPrincipal } from '@mcpx/envelope';
import { AccountsRepository } from './accounts/accounts.repository.js';

const USAGE = 'usage: accounts create <principal>… | accounts list';

/**
 * The operator's accounts command. With `ACCOUNTS=closed` (compose and the k8s manifests) an
 * account exists only once an operator created it: `create` takes the principals (the owners'
 * public keys, as `mcpx keys new` prints them) and prints one JSON line per principal,
 * `{principal, created}` (false: it existed already); `list` prints `{principal, createdAt}` per
 * account. It talks to the registry's database directly (an operator's access, not the network's),
 * so no key of the action API can create accounts. Idempotent.
 *
 *   DATABASE_URL=… npm run accounts -- create <principal>
 *   kubectl exec deploy/registry -- node_modules/.bin/tsx services/registry/src/accounts-command.ts create <principal>
 */
async function main(args: string[]): Promise<number> {
  const [verb, ...principals] = args;
  if (verb !== 'create' && verb !== 'list') {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const bad = principals.find((p) => publicKeyFromPrincipal(p) === null);
  if (verb === 'create' && (principals.length === 0 || bad !== undefined)) {
    process.stderr.write(
      `${bad === undefined ? USAGE : `not a principal (an ed25519 public key, 43 base64url characters): ${bad.slice(0, 64)}`}\n`,
    );
    return 2;
  }
  const config = loadConfig('registry', process.env);
  const db = createDb(config.databaseUrl, { applicationName: 'accounts-command', max: 2 });
  try {
    await migrate(db, 'registry');
    const accounts = new AccountsRepository(db, config.accounts);
    if (verb === 'list') {
      for (const a of await accounts.list())
        process.stdout.write(`${JSON.stringify({ principal: a.principal, createdAt: a.createdAt.toISOString() })}\n`);
      return 0;
    }
    for (const principal of principals)
      process.stdout.write(`${JSON.stringify({ principal, created: await accounts.create(principal) })}\n`);
    return 0;
  } finally {
    await db.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`accounts failed: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
