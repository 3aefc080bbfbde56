import { loadConfig } from '@mcpx/config';
import { startProjector } from './projector.js';
import { loadProjectorSettings } from './settings.js';

/** The projector process: configuration from the environment, then the service. */
async function main(): Promise<void> {
  const projector = await startProjector(loadConfig('projector', process.env), loadProjectorSettings(process.env));
  const stop = (): void => void projector.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`projector failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
