import { loadConfig, loadRegistrySettings } from '@mcpx/config';
import { startRegistry, type RegistryOptions } from './registry.js';

/** The registry process: configuration from the environment (read once, here), then the service. */
async function main(): Promise<void> {
  const settings = loadRegistrySettings(process.env);
  const opts: RegistryOptions = {
    ...(settings.reprobeBaseMs !== undefined ? { reprobe: { baseMs: settings.reprobeBaseMs } } : {}),
    ...(settings.discoveryConcurrency !== undefined ? { discoveryConcurrency: settings.discoveryConcurrency } : {}),
    // Where owners' browsers reach the registry (the OAuth callback); default: its listen address.
    ...(settings.publicUrl !== undefined ? { publicUrl: settings.publicUrl } : {}),
    // An https public URL offers OAuth client ID metadata documents; `off` keeps to registration.
    ...(settings.clientMetadataDocument === false ? { clientMetadataDocument: false } : {}),
    // The agent endpoint as the console shows it (ENDPOINT_PUBLIC_URL, ENDPOINT_PORT).
    endpoint: settings.endpoint,
    // The authorization server's own origin, if it has one (AUTHORIZATION_SERVER_PUBLIC_URL).
    ...(settings.authorizationServerUrl !== undefined
      ? { authorizationServerUrl: settings.authorizationServerUrl }
      : {}),
    inbound: settings.inbound,
  };
  const registry = await startRegistry(loadConfig('registry', process.env), opts);
  const stop = (): void => void registry.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`registry failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
