/**
 * The README's input-requests tour server: a standalone SDK v2 server whose tools ask for input
 * mid-call (`deploy`, `sign_in`, `provision`, `profile`, `summarize`, `list_roots`; see
 * input-mcp-server.ts), on loopback in a process of its own.
 *
 * `--era modern|dual` picks its posture (default modern: 2026-07-28 only; dual: both eras, a 2025
 * client is asked with `elicitation/create`); `--port N` listens there (default a free port).
 * Prints `{"url": …, "port": …}` on stdout once listening; exits on SIGTERM or Ctrl-C.
 */
import { startInputMcpServer } from './input-mcp-server.js';

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
}

const era = arg('era') ?? 'modern';
if (era !== 'modern' && era !== 'dual') throw new Error(`--era modern|dual, got ${era}`);
const port = Number(arg('port') ?? '0');
if (!Number.isInteger(port) || port < 0 || port > 65_535)
  throw new Error(`--port must be a port number, got ${arg('port')}`);
const server = await startInputMcpServer({ era, port });
process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port })}\n`);
const stop = (): void => void server.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
