import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { addTool, echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { InProcessSystem } from '../support/system.js';

const VENDOR_TOKEN = 'gho_cliVendorToken123';

/** The owner's trust decisions from the CLI: a tool's permission level, and vendor connections. */
describe('mcpx tools permission and vendors', { timeout: 180_000 }, () => {
  let telemetry: Telemetry;
  let system: InProcessSystem;
  let upstream: TestMcpServer;
  let vendorUpstream: TestMcpServer;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    upstream = await startTestMcpServer({ tools: [echoTool(), addTool()] });
    vendorUpstream = await startTestMcpServer({
      requireHeader: { name: 'Authorization', value: `Bearer ${VENDOR_TOKEN}` },
      tools: [echoTool()],
    });
    telemetry = await setupTelemetry({ serviceName: 'mcpx-cli-trust', spanExporter: new InMemorySpanExporter() });
    system = await InProcessSystem.start({
      telemetry,
      env: { BUILTIN_ENDPOINTS: `github=${vendorUpstream.url}`, REGISTRY_REPROBE_BASE_MS: '600000' },
    });
    ({ env, dir } = cliEnvFor(new ApiClient(system.apiUrl)));
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
    await vendorUpstream?.close();
    await telemetry?.shutdown();
  });

  it('sets a tool to always_ask and back to inherited; servers show says which level holds and why', async () => {
    expect((await runCli(['servers', 'set', 'demo', upstream.url], env)).code).toBe(0);
    expect((await runCli(['servers', 'show', 'demo'], env)).stdout).toMatch(/demo__add {2}\[act\]/);

    const ask = await runCli(['tools', 'permission', 'demo', 'add', 'always_ask'], env);
    expect(ask.code, ask.stderr).toBe(0);
    expect(ask.stdout.trim()).toBe("demo add: always_ask (the owner's; inherited: act)");
    expect((await runCli(['servers', 'show', 'demo'], env)).stdout).toMatch(
      /demo__add {2}\[always_ask, set by the owner\]/,
    );

    const back = await runCli(['tools', 'permission', 'demo', 'add', 'inherited', '--json'], env);
    expect(JSON.parse(back.stdout)).toMatchObject({
      server: 'demo',
      tool: 'add',
      permission: 'act',
      overridden: false,
    });

    const bad = await runCli(['tools', 'permission', 'demo', 'add', 'sometimes'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('act, always_ask or inherited');
    const unknown = await runCli(['tools', 'permission', 'demo', 'nope', 'act'], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('lists no tool nope');
  });

  it('connects a vendor (flags or a tokens file) and disconnects it; the token never shows', async () => {
    const connect = await runCli(['vendors', 'connect', 'github', '--access-token', VENDOR_TOKEN], env);
    expect(connect.code, connect.stderr).toBe(0);
    expect(connect.stdout).toMatch(/^connected github: github \(\d+ tools\)/);
    const refreshed = await runCli(['servers', 'refresh', 'github'], env);
    expect(refreshed.stdout).toMatch(/^github {2}connected, 1 tool/);

    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify({ accessToken: VENDOR_TOKEN, expiresAt: '2099-01-01T00:00:00Z' }), {
      mode: 0o600,
    });
    const again = await runCli(['vendors', 'connect', 'github', '--tokens-file', file, '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ vendor: 'github', servers: [{ name: 'github', builtin: true }] });

    const off = await runCli(['vendors', 'disconnect', 'github'], env);
    expect(off.stdout.trim()).toBe('disconnected github: github went dark');
    expect((await runCli(['servers', 'list'], env)).stdout).not.toContain('github');
    const none = await runCli(['vendors', 'disconnect', 'github'], env);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('no connection to github');

    const missing = await runCli(['vendors', 'connect', 'github'], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('--access-token T or --tokens-file PATH is required');
    for (const out of [connect, refreshed, again, off, none])
      expect(out.stdout + out.stderr).not.toContain(VENDOR_TOKEN);
  });
});
