import { loadConfig } from '@mcpx/config';
import { startRegistry, type RegistryOptions } from './registry.js';

function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer`);
  return n;
}

/** The registry process: configuration from the environment, then the service. */
async function main(): Promise<void> {
  const reprobeBaseMs = positiveInt('REGISTRY_REPROBE_BASE_MS', process.env.REGISTRY_REPROBE_BASE_MS);
  const concurrency = positiveInt('REGISTRY_DISCOVERY_CONCURRENCY', process.env.REGISTRY_DISCOVERY_CONCURRENCY);
  const opts: RegistryOptions = {
    ...(reprobeBaseMs !== undefined ? { reprobe: { baseMs: reprobeBaseMs } } : {}),
    ...(concurrency !== undefined ? { discoveryConcurrency: concurrency } : {}),
    // Where owners' browsers reach the registry (the OAuth callback); default: its listen address.
    ...(process.env.REGISTRY_PUBLIC_URL ? { publicUrl: process.env.REGISTRY_PUBLIC_URL.replace(/\/+$/, '') } : {}),
    // An https public URL offers OAuth client ID metadata documents; `off` keeps to registration.
    ...(process.env.REGISTRY_OAUTH_CLIENT_METADATA === 'off' ? { clientMetadataDocument: false } : {}),
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
