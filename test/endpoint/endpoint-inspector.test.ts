import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingServer, type EverythingServer } from '../servers/everything.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

const require = createRequire(import.meta.url);
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));
/** The 1.x command-line client (SDK v1) and the 2.x one (SDK v2), as their packages' bins run them. */
const INSPECTORS = {
  'inspector-cli 1.x': { bin: join(packageDir('@modelcontextprotocol/inspector-cli'), 'build', 'cli.js'), mode: ['--cli'] },
  'inspector 2.x': { bin: join(packageDir('@modelcontextprotocol/inspector'), 'clients', 'launcher', 'build', 'index.js'), mode: ['--cli'] },
} as const;

function run(bin: string, args: string[], timeoutMs = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // A catalog of its own (the 2.x client writes one), and no colours. The working directory is
    // the bin's own: inspector-cli 1.0.3 looks for its package.json relative to the working
    // directory (`fs.existsSync('../package.json')`) but imports it relative to its module, so it
    // only starts from its build folder (an upstream bug; its launcher has the same).
    const child = spawn(process.execPath, [bin, ...args], { cwd: dirname(bin), env: { ...process.env, NO_COLOR: '1', MCP_CATALOG_PATH: join(dirname(bin), `.catalog-${process.pid}.json`) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/** The JSON document a CLI printed (the last one, whatever it logged before). */
function lastJson(text: string): any {
  const start = text.indexOf('{');
  if (start < 0) throw new Error(`no JSON in: ${text.slice(0, 2_000)}`);
  return JSON.parse(text.slice(start));
}

/**
 * The MCP Inspector's command-line clients of both generations list the agent's tools through its
 * endpoint and call `everything__echo`, with server-everything and a modern test server behind it.
 */
describe('the agent MCP endpoint through the MCP Inspector command-line clients', () => {
  let sys: EndpointSystem;
  let everything: EverythingServer;
  let modern: TestMcpServer;
  let agentId: string;
  let token: string;

  beforeAll(async () => {
    [sys, everything, modern] = await Promise.all([startEndpointSystem(), startEverythingServer('streamableHttp'), startTestMcpServer({ era: 'modern' })]);
    await sys.system.setServer('everything', everything.url);
    await sys.system.setServer('demo', modern.url);
    agentId = await sys.system.createAgent('inspected', ['everything', 'demo'], 15);
    ({ token } = await sys.token('inspected'));
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await Promise.all([everything?.close(), modern?.close()]);
  });

  it.each(Object.keys(INSPECTORS) as Array<keyof typeof INSPECTORS>)('%s lists the tools and calls everything__echo', async (which) => {
    const { bin, mode } = INSPECTORS[which];
    const common = [...mode, sys.urlOf(agentId), '--transport', 'http', '--header', `Authorization: Bearer ${token}`];
    const list = await run(bin, [...common, '--method', 'tools/list']);
    expect(list.code, list.stderr).toBe(0);
    const names: string[] = lastJson(list.stdout).tools.map((t: { name: string }) => t.name);
    expect(names.filter((n) => n.startsWith('everything__')).length).toBeGreaterThanOrEqual(13);
    expect(names).toContain('demo__echo');
    const call = await run(bin, [...common, '--method', 'tools/call', '--tool-name', 'everything__echo', '--tool-arg', 'message=hi from the inspector']);
    expect(call.code, call.stderr).toBe(0);
    expect(lastJson(call.stdout).content).toEqual([{ type: 'text', text: 'Echo: hi from the inspector' }]);
  }, 120_000);
});
