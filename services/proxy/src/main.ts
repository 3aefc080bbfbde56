import { loadConfig } from '@mcpx/config';
import { startProxy } from './proxy.js';

/** The proxy process: configuration from the environment, then the service. */
async function main(): Promise<void> {
  const idle = process.env.PROXY_IDLE_MS;
  const proxy = await startProxy(loadConfig('proxy', process.env), idle ? { idleMs: Number(idle) } : {});
  const stop = (): void => void proxy.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`proxy failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
