/**
 * A standalone upstream for benchmarks: the test MCP server with the default `echo` tool on
 * loopback, in a process of its own so that it does not share a CPU budget with what is measured.
 * `--era modern|dual|legacy` picks its posture (default legacy: SDK v1, stateful sessions).
 * Prints `{"url": …, "port": …}` on stdout once listening; exits on SIGTERM.
 */
import { startTestMcpServer } from './mcp-test-server.js';
import { echoTool } from './test-tools.js';

const at = process.argv.indexOf('--era');
const era = at === -1 ? 'legacy' : process.argv[at + 1];
if (era !== 'modern' && era !== 'dual' && era !== 'legacy') throw new Error(`--era modern|dual|legacy, got ${era}`);
const server = await startTestMcpServer({ tools: [echoTool()], era });
process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port })}\n`);
const stop = (): void => void server.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
