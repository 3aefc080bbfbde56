import { loadAuthorizationServerSettings } from '@mcpx/config';
import { startAuthorizationServer } from './authorization-server.js';

/**
 * The authorization server process: its settings from the environment (HTTP_PORT,
 * AUTHORIZATION_SERVER_PUBLIC_URL, REGISTRY_PUBLIC_URL, AUTHORIZATION_SERVER_DATABASE_URL or
 * DATABASE_URL, REDIS_URL, OUTBOUND_*, QUOTA_*, TRUSTED_PROXIES; never SECRETS_KEYRING or NATS_*),
 * then the service.
 */
async function main(): Promise<void> {
  const server = await startAuthorizationServer(loadAuthorizationServerSettings(process.env));
  const stop = (): void =>
    void server.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`authorization server failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
