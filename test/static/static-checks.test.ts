import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/system.js';

/**
 * Runs a tool of node_modules/.bin (or a command given by its path under the root) in a process
 * group of its own; past `boundMs` the whole group (the .bin wrapper and the node under it) is
 * killed, so a cut check leaves no compiler running.
 */
function run(bin: string, args: string[], boundMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const command = bin.includes('/') ? join(ROOT, bin) : join(ROOT, 'node_modules', '.bin', bin);
    const child = spawn(command, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    const timer = setTimeout(() => {
      output += `\n${bin} killed after ${boundMs} ms`;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, boundMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, output });
    });
  });
}

/**
 * The type checker, the linter and the formatter's check are part of every test run: a change that breaks one fails.
 * They run side by side (each is its own process, minutes of CPU on a small machine; eslint reads
 * the sources, never tsc's declaration output), and the sequencer starts this file first. The
 * bound is generous: on a busy 2-core machine, next to the other test files, each has taken more
 * than five minutes; a slow machine is not a type error.
 */
const BOUND_MS = 900_000;
/**
 * The type checker: TypeScript 7, the native compiler (`typescript-native`), a third of the
 * JavaScript one's CPU on this tree. The lint's typed rules read types through TypeScript's
 * JavaScript API, which 7 does not have: typescript-eslint keeps `typescript` (6.x).
 */
const TSC = 'node_modules/typescript-native/bin/tsc';
/** The tool's own bound, inside the test's: the test then fails with its output, not a timeout. */
const RUN_MS = BOUND_MS - 10_000;
describe.concurrent('static checks', () => {
  it(
    'type-checks every project (tsc -b)',
    async () => {
      const { code, output } = await run(TSC, ['-b'], RUN_MS);
      expect(output).toBe('');
      expect(code).toBe(0);
    },
    BOUND_MS,
  );

  it(
    'type-checks the set-up scripts (outside the build graph: they run under tsx)',
    async () => {
      const { code, output } = await run(TSC, ['-p', 'scripts/tsconfig.json'], RUN_MS);
      expect(output).toBe('');
      expect(code).toBe(0);
    },
    BOUND_MS,
  );

  it(
    'is formatted (prettier --check: the TypeScript and JavaScript; `npm run format` writes it)',
    async () => {
      const { code, output } = await run('prettier', ['--check', '.', '--log-level', 'warn'], RUN_MS);
      expect(output).toBe('');
      expect(code).toBe(0);
    },
    BOUND_MS,
  );

  it(
    'lints clean (eslint, with no-floating-promises)',
    async () => {
      const { code, output } = await run('eslint', ['.'], RUN_MS);
      expect(output).toBe('');
      expect(code).toBe(0);
    },
    BOUND_MS,
  );
});
