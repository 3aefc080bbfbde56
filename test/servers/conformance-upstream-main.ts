/**
 * The conformance fixture (`conformance-upstream.ts`) in a process of its own, for
 * `pnpm bench conformance` and by hand: `tsx test/servers/conformance-upstream-main.ts --port P`
 * (default a free port). Prints `{"url": …, "port": …}` on stdout once listening; exits on
 * SIGTERM or Ctrl-C.
 */
import { startConformanceUpstream } from './conformance-upstream.js';

const at = process.argv.indexOf('--port');
const port = Number(at === -1 ? '0' : process.argv[at + 1]);
if (!Number.isInteger(port) || port < 0 || port > 65_535)
  throw new Error(`--port must be a port number, got ${process.argv[at + 1]}`);
const server = await startConformanceUpstream({ port });
process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port })}\n`);
const stop = (): void => void server.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
