import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSPECTORS, lastJson, runInspector as run, runProcess, type ProcessResult } from './inspector-clis.js';
import { EVERY_BLOCK_TYPES, lessConnectorKeys } from './client-results.js';
import { everyBlockTools } from '../servers/content-tools.js';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/** Runs a shell command line as a user types it, on this process's Node (20) first on the PATH, from an empty folder. */
async function shell(line: string, timeoutMs: number): Promise<ProcessResult> {
  const cwd = mkdtempSync(join(tmpdir(), 'mcpx-printed-'));
  const env = {
    ...process.env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    NO_COLOR: '1',
    npm_config_yes: 'true',
    npm_config_update_notifier: 'false',
  };
  try {
    return await runProcess('/bin/sh', ['-c', line], { cwd, env }, timeoutMs);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/**
 * The MCP Inspector's command-line clients of both generations (1.x on Node 20, 2.x on the
 * workspace's Node 22) list the agent's tools through its endpoint, call `everything__echo`, and
 * get every block type of a server's result as they get it from that server directly; and the
 * Inspector command that `mcpx agents endpoint` prints works as printed where the Node is 20.
 */
describe('the agent MCP endpoint through the MCP Inspector command-line clients', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TestMcpServer;
  let docs: TestMcpServer;
  let agentId: string;
  let token: string;

  beforeAll(async () => {
    [sys, everything, modern, docs] = await Promise.all([
      startEndpointSystem(),
      startEverythingServer('streamableHttp'),
      startTestMcpServer({ era: 'modern' }),
      startTestMcpServer({ era: 'dual', tools: [echoTool(), ...everyBlockTools()] }),
    ]);
    await sys.system.setServer('everything', everything.url);
    await sys.system.setServer('demo', modern.url);
    await sys.system.setServer('docs', docs.url);
    agentId = await sys.system.createAgent('inspected', ['everything', 'demo', 'docs'], 21);
    ({ token } = await sys.token('inspected'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close(), docs?.close()]);
  });

  it.each(Object.keys(INSPECTORS) as Array<keyof typeof INSPECTORS>)(
    '%s lists the tools and calls everything__echo',
    async (which) => {
      const { bin, mode } = INSPECTORS[which];
      const common = [...mode, sys.urlOf(agentId), '--transport', 'http', '--header', `Authorization: Bearer ${token}`];
      const list = await run(bin, [...common, '--method', 'tools/list']);
      expect(list.code, list.stderr).toBe(0);
      const names: string[] = lastJson(list.stdout).tools.map((t: { name: string }) => t.name);
      expect(names.filter((n) => n.startsWith('everything__')).length).toBe(16);
      expect(names).toContain('demo__echo');
      const call = await run(bin, [
        ...common,
        '--method',
        'tools/call',
        '--tool-name',
        'everything__echo',
        '--tool-arg',
        'message=hi from the inspector',
      ]);
      expect(call.code, call.stderr).toBe(0);
      expect(lastJson(call.stdout).content).toEqual([{ type: 'text', text: 'Echo: hi from the inspector' }]);
    },
    120_000,
  );

  it.each(Object.keys(INSPECTORS) as Array<keyof typeof INSPECTORS>)(
    '%s gets every block of a result through the endpoint as it gets it from the server',
    async (which) => {
      const { bin, mode } = INSPECTORS[which];
      const direct = await run(bin, [
        ...mode,
        docs.url,
        '--transport',
        'http',
        '--method',
        'tools/call',
        '--tool-name',
        'every_block',
      ]);
      expect(direct.code, direct.stderr).toBe(0);
      const through = await run(bin, [
        ...mode,
        sys.urlOf(agentId),
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${token}`,
        '--method',
        'tools/call',
        '--tool-name',
        'docs__every_block',
      ]);
      expect(through.code, through.stderr).toBe(0);
      const [d, t] = [lastJson(direct.stdout), lastJson(through.stdout)];
      expect(d.content.map((b: { type: string }) => b.type)).toEqual(EVERY_BLOCK_TYPES);
      expect(lessConnectorKeys(t)).toEqual(lessConnectorKeys(d));
    },
    120_000,
  );

  it('the Inspector command `mcpx agents endpoint` prints lists the tools, run as printed on Node 20', async () => {
    const { env } = cliEnvFor(sys.system.api, { MCPX_ENDPOINT_URL: sys.endpoint.url });
    const shown = await runCli(['agents', 'endpoint', 'inspected', '--token', token, '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    const printed: string = JSON.parse(shown.stdout).snippets.inspector;
    expect(printed).toContain(sys.urlOf(agentId));
    expect(process.version).toMatch(/^v20\./);
    // npx fetches the pinned Inspector and a Node 22 to run it on (cached after the first run).
    const res = await shell(printed, 280_000);
    expect(res.code, res.stderr.slice(-2_000)).toBe(0);
    const names: string[] = lastJson(res.stdout).tools.map((t: { name: string }) => t.name);
    expect(names).toContain('docs__every_block');
    expect(names.filter((n) => n.startsWith('everything__')).length).toBe(16);
  }, 300_000);
});
