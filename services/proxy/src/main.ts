import { installTraceContext } from '@mcpx/telemetry';
import { loadConfig } from '@mcpx/config';
import { startProxy } from './proxy.js';

/**
 * The proxy process: configuration from the environment (including PROXY_IDLE_MS,
 * PROXY_MAX_CONCURRENCY_PER_SERVER and PROXY_RATE_PER_SERVER, see libs/config), then the service.
 */
async function main(): Promise<void> {
  // The call path passes its trace context by hand (docs/operations.md#trace-context).
  installTraceContext('explicit');
  const proxy = await startProxy(loadConfig('proxy', process.env));
  const stop = (): void =>
    void proxy.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`proxy failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
