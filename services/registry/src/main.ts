import { loadConfig } from '@mcpx/config';
import { startRegistry } from './registry.js';

/** The registry process: configuration from the environment, then the service. */
async function main(): Promise<void> {
  const registry = await startRegistry(loadConfig('registry', process.env));
  const stop = (): void => void registry.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`registry failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
