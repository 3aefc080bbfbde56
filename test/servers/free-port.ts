import { createServer } from 'node:net';

/**
 * Ports handed out per test worker: each vitest worker (`VITEST_POOL_ID` 1, 2, …) takes its own
 * block below the kernel's ephemeral range (32768 and up here), so a port given to one worker's
 * child is never given to another worker's, nor taken by a socket's ephemeral end, while the
 * child starts. (A port freed by `listen(0)` could be handed to another process at once: a
 * service then died on EADDRINUSE while another test's service answered its health check.)
 */
const BLOCK_SIZE = 1_500;
/**
 * Where worker 1's block starts. `MCPX_TEST_PORT_BASE` moves it, so two test runs on one machine
 * (two checkouts, each run with `MCPX_TEST_WORKERS=1`) can take blocks that do not overlap.
 */
const BLOCK_BASE = Number(process.env.MCPX_TEST_PORT_BASE ?? '') || 20_000;
let next = 0;

function block(): number | undefined {
  const id = Number(process.env.VITEST_POOL_ID ?? '');
  return Number.isInteger(id) && id >= 1 && id <= 8 ? BLOCK_BASE + (id - 1) * BLOCK_SIZE : undefined;
}

function bindable(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, host, () => {
      const address = server.address();
      const bound = address !== null && typeof address !== 'string' ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port that was free on `host` a moment ago, for children that need a port up front (listen
 * on 0 when you can bind yourself). Inside a test worker it comes from the worker's own block;
 * elsewhere (benchmarks, scripts) it is one the kernel picked, which another process may take first.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const base = block();
  if (base !== undefined) {
    for (let tries = 0; tries < BLOCK_SIZE; tries++) {
      const port = base + (next++ % BLOCK_SIZE);
      if ((await bindable(port, host)) !== undefined) return port;
    }
  }
  const port = await bindable(0, host);
  if (port === undefined) throw new Error('could not bind a free port');
  return port;
}
