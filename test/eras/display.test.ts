import { describe, expect, it } from 'vitest';
import type { TestMcpServer, TestTool } from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import type { RegistryHarness } from '../support/registry-harness.js';
import { eraServersPerSuite } from './era-servers.js';

/** A header name with a space is no RFC 9110 token: the tool cannot be called as the server expects. */
const badHeaderTool: TestTool = {
  name: 'spaced',
  inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Bad Name' } } },
  handler: async () => ({ content: [{ type: 'text', text: 'never' }] }),
};

/** `mcpx servers list` and `servers show` as a user runs them: each server's era and protocol version, and what was skipped. */
describe('mcpx shows eras', () => {
  let h: RegistryHarness;
  let modern: TestMcpServer;
  let legacy: TestMcpServer;

  eraServersPerSuite((started) => ({ h, modern, legacy } = started), [badHeaderTool]);

  it('servers list and show name the era and version; show names a skipped tool and why', async () => {
    const { env } = cliEnvFor(h.api());
    expect((await runCli(['servers', 'set', 'new', modern.url], env)).code).toBe(0);
    expect((await runCli(['servers', 'set', 'old', legacy.url], env)).code).toBe(0);
    const list = await runCli(['servers', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^new {2}connected, 1 tool .* modern 2026-07-28$/m);
    expect(list.stdout).toMatch(/^old {2}connected, 1 tool .* legacy 2025-\d\d-\d\d$/m);
    const show = await runCli(['servers', 'show', 'new'], env);
    expect(show.stdout).toContain('  protocol: modern 2026-07-28');
    expect(show.stdout).toMatch(/ {2}skipped tool: spaced — .*x-mcp-header/);
    const json = JSON.parse((await runCli(['servers', 'show', 'old', '--json'], env)).stdout) as {
      server?: { era?: string };
      era?: string;
    };
    expect(json.server?.era ?? json.era).toBe('legacy');
  });
});
