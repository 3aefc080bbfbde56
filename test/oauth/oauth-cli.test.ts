import { describe, expect, it } from 'vitest';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { TestBrowser } from '../support/oauth-browser.js';
import type { InProcessSystem } from '../support/system.js';
import { oauthSystemPerSuite } from '../support/fixtures/suites.js';

/** The owner's OAuth flow from the CLI: set prints where to authorize, authorize prints a fresh URL. */
describe('mcpx and OAuth', () => {
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;

  oauthSystemPerSuite({ serviceName: 'mcpx-oauth-cli' }, (o) => ({ system, as, upstream } = o));

  it('servers set NAME URL --auth oauth prints the authorization URL; servers authorize NAME prints a fresh one that completes', async () => {
    const api = new ApiClient(system.apiUrl);
    const { env } = cliEnvFor(api);

    const set = await runCli(['servers', 'set', 'clioauth', upstream.url, '--auth', 'oauth'], env);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^clioauth {2}waiting for authorization/);
    const first = /authorize in a browser: (\S+)/.exec(set.stdout)?.[1];
    expect(first).toBeDefined();
    // A ticket of the registry; opening it leads to the authorization server.
    expect(first!.startsWith(`${system.apiUrl}/v1/oauth/start?ticket=`)).toBe(true);
    expect((await new TestBrowser().start(first!)).origin + '/').toBe(as.issuer);

    const json = await runCli(['servers', 'set', 'clioauth', upstream.url, '--auth', 'oauth', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout) as { name: string; status: { state: string }; authorizationUrl?: string };
    expect(parsed.name).toBe('clioauth');
    expect(parsed.status.state).toBe('auth_required');
    expect(parsed.authorizationUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/oauth\/start\?ticket=[A-Za-z0-9_-]{43}$/);

    const authorize = await runCli(['servers', 'authorize', 'clioauth'], env);
    expect(authorize.code, authorize.stderr).toBe(0);
    const fresh = authorize.stdout.trim().split('\n').at(-1)!;
    expect(fresh).not.toBe(first);
    expect((await new TestBrowser().open(fresh)).text).toContain('Connected to clioauth');
    const list = await runCli(['servers', 'list'], env);
    expect(list.stdout).toMatch(/clioauth {2}connected, 2 tools {2}127\.0\.0\.1:\d+ \[oauth\]/);

    const plain = await runCli(['servers', 'set', 'cliplain', upstream.url, '--auth', 'none'], env);
    expect(plain.code).toBe(0);
    const refused = await runCli(['servers', 'authorize', 'cliplain'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/does not use OAuth/);
  });
});
