import { loadConfig } from '@mcpx/config';
import { startProjector } from './projector.js';

function positive<K extends string>(key: K, value: string | undefined): Partial<Record<K, number>> {
  const n = Number(value);
  return value !== undefined && Number.isFinite(n) && n > 0 ? ({ [key]: n } as Record<K, number>) : {};
}

/** The projector process: configuration from the environment, then the service. */
async function main(): Promise<void> {
  const projector = await startProjector(loadConfig('projector', process.env), {
    // How soon an event a dead instance held is redelivered (default 30 s).
    ...positive('ackWaitMs', process.env.PROJECTOR_ACK_WAIT_MS),
    // agent-tools-changed messages awaiting their PubAck at once (default 5,000).
    ...positive('publishWindow', process.env.PROJECTOR_PUBLISH_WINDOW),
  });
  const stop = (): void => void projector.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`projector failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
