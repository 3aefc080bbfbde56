/**
 * A standalone MCP server on loopback, in a process of its own: the benchmarks' upstream (so it
 * does not share a CPU budget with what is measured) and the README tour's modern-era server.
 *
 * `--era modern|dual|legacy` picks its posture (default legacy: SDK v1, stateful sessions; modern:
 * SDK v2 `createMcpHandler` refusing the 2025 era); `--port N` listens there (default a free
 * port); `--tools echo|default` serves `echo` alone (default, for benchmarks) or `echo` and `add`.
 * Prints `{"url": …, "port": …}` on stdout once listening; exits on SIGTERM or Ctrl-C.
 */
import { startTestMcpServer } from './mcp-test-server.js';
import { defaultTools, echoTool } from './test-tools.js';

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
}

const era = arg('era') ?? 'legacy';
if (era !== 'modern' && era !== 'dual' && era !== 'legacy') throw new Error(`--era modern|dual|legacy, got ${era}`);
const port = Number(arg('port') ?? '0');
if (!Number.isInteger(port) || port < 0 || port > 65_535)
  throw new Error(`--port must be a port number, got ${arg('port')}`);
const tools = arg('tools') === 'default' ? defaultTools() : [echoTool()];
const server = await startTestMcpServer({ tools, era, port });
process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port })}\n`);
const stop = (): void => void server.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
