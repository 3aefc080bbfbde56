/**
 * The README's OAuth tour server: an MCP server (`echo`, `add`) that answers 401 without a token
 * of its authorization server, and that authorization server (RFC 8414 metadata, dynamic
 * registration, PKCE; it approves every sign-in at once, as the test user), on loopback in a
 * process of its own.
 *
 * `--era modern|dual|legacy` picks the MCP server's posture (default modern); `--port N` is the
 * MCP server's port (default a free one; the authorization server takes a free one). Prints
 * `{"url": …, "issuer": …}` on stdout once listening; exits on SIGTERM or Ctrl-C.
 */
import { startOAuthServer, startProtectedMcpServer } from './oauth-server.js';
import { defaultTools } from './test-tools.js';

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
}

const era = arg('era') ?? 'modern';
if (era !== 'modern' && era !== 'dual' && era !== 'legacy') throw new Error(`--era modern|dual|legacy, got ${era}`);
const port = Number(arg('port') ?? '0');
if (!Number.isInteger(port) || port < 0 || port > 65_535)
  throw new Error(`--port must be a port number, got ${arg('port')}`);
const as = await startOAuthServer();
const server = await startProtectedMcpServer(as, { era, port, tools: defaultTools() });
process.stdout.write(`${JSON.stringify({ url: server.url, issuer: as.issuer })}\n`);
const stop = (): void => void Promise.all([server.close(), as.close()]).then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
