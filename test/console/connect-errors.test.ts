import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import {
  startEverythingServer,
  startOAuthServer,
  startProtectedMcpServer,
  type EverythingServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { ProxySystem } from '../support/proxy-system.js';
import { closedPort } from '../support/fixtures/closed-port.js';

/**
 * Connect failures in words (issue 24, point 3): real servers on loopback, the real registry's
 * discovery. Each failure is one line that says what happened and what to try (`status.summary`,
 * shown by the CLI and the console); the failure as it came stays in `status.error` (`--json`,
 * `servers show`), and an HTML page is named, never shown.
 */
describe('connect errors a person understands', { timeout: 180_000 }, () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let as: TestOAuthServer;
  let guarded: TestMcpServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    [system, everything, as] = await Promise.all([
      ProxySystem.start(),
      startEverythingServer('streamableHttp'),
      startOAuthServer(),
    ]);
    guarded = await startProtectedMcpServer(as, { era: 'modern' });
    ({ env } = cliEnvFor(system.api));
  });

  afterAll(async () => {
    await system?.stop();
    await Promise.all([everything?.close(), guarded?.close()]);
    await as?.close();
  });

  const set = async (name: string, config: Record<string, unknown>): Promise<RedactedMcpServer> =>
    (await system.api.act<{ server: RedactedMcpServer }>('SetMcpServer', { name, config })).server;

  it('a 404 at a wrong path: "MCP servers usually serve /mcp", and the HTML page is never shown', async () => {
    const wrong = everything.url.replace(/\/mcp$/, '/mpc');
    const server = await set('typo', { url: wrong });
    expect(server.status.state).toBe('error');
    expect(server.status.summary).toBe('the server answered 404 at /mpc; MCP servers usually serve /mcp');
    // The failure as it came: its status, and the page named, not pasted.
    expect(server.status.error).toContain('HTTP 404');
    expect(server.status.error).toContain('an HTML page, not an MCP answer');
    expect(server.status.error).not.toMatch(/<(html|pre|body|!DOCTYPE)/i);

    const out = await runCli(['servers', 'set', 'typo', wrong], env);
    expect(out.code, out.stderr).toBe(0);
    const [line, next] = out.stdout.trim().split('\n');
    expect(line).toContain('typo  unreachable: the server answered 404 at /mpc; MCP servers usually serve /mcp');
    expect(next).toContain('mcpx servers show typo');
    expect(out.stdout).not.toMatch(/<(html|pre|body)/i);
    // The raw detail on request: the server page and --json.
    const show = await runCli(['servers', 'show', 'typo'], env);
    expect(show.stdout).toMatch(/ {2}detail: .*HTTP 404/);
    const json = JSON.parse((await runCli(['servers', 'show', 'typo', '--json'], env)).stdout) as RedactedMcpServer;
    expect(json.status.error).toContain('HTTP 404');
    expect(json.status.summary).toContain('usually serve /mcp');
  });

  it('https to a plain port: says the server does not speak TLS and to use http://', async () => {
    const port = new URL(everything.url).port;
    const server = await set('tls', { url: `https://127.0.0.1:${port}/mcp` });
    expect(server.status.state).toBe('error');
    expect(server.status.summary).toBe(
      `https to 127.0.0.1:${port}, which does not speak TLS: use http:// for a plain server, or the server's https port`,
    );
    expect(server.status.error).toBeTruthy();
  });

  it('a refused port: nothing answers there, is the server running', async () => {
    const port = await closedPort();
    const server = await set('down', { url: `http://127.0.0.1:${port}/mcp` });
    expect(server.status.state).toBe('error');
    expect(server.status.summary).toBe(
      `nothing answers at 127.0.0.1:${port} (connection refused): is the server running, and is the port right?`,
    );
    expect(server.status.error).toContain('ECONNREFUSED');
  });

  it('a 401 with OAuth metadata on a server set with no auth: "set it with --auth oauth"', async () => {
    const server = await set('signin', { url: guarded.url, auth: 'none' });
    expect(server.status.state).toBe('auth_required');
    expect(server.status.summary).toBe(
      'this server signs in with OAuth: set it with --auth oauth (in the console: Authorize)',
    );
    const out = await runCli(['servers', 'list'], env);
    expect(out.stdout).toContain(
      'signin  waiting for authorization: this server signs in with OAuth: set it with --auth oauth',
    );
  });

  it('a server that connects carries no summary', async () => {
    const server = await set('fine', { url: everything.url });
    expect(server.status.state).toBe('ok');
    expect(server.status.summary).toBeUndefined();
  });
});
