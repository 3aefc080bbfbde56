import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * vitest.config.ts runs the files of a worker one after another in one process (isolate: false):
 * a file sees the modules, globals and environment the files before it left. That holds only while
 * no test, and no code a test runs in-process, changes what the next file would read. These are the
 * ways it could, found by their text in the tests and the sources (the global set-up runs in the
 * main process and sets the run's variables; an entry point, main.ts, runs in a process of its own).
 */
const LEAKS: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  { name: 'a module mock (vi.mock, vi.doMock)', pattern: /\bvi\s*\.\s*(?:mock|doMock|hoisted)\s*\(/ },
  {
    name: 'a stubbed global or variable (vi.stubEnv, vi.stubGlobal)',
    pattern: /\bvi\s*\.\s*(?:stubEnv|stubGlobal)\s*\(/,
  },
  {
    name: 'a write to process.env',
    pattern:
      /\bprocess\.env(?:\.[A-Za-z_$][\w$]*|\[[^\]]+\])\s*(?:=(?!=)|\?\?=|\|\|=)|delete\s+process\.env\b|Object\.assign\(\s*process\.env\b/,
  },
  {
    name: 'a process-wide change (process.chdir, process.umask, setGlobalDispatcher)',
    pattern: /\bprocess\.(?:chdir|umask)\s*\(|\bsetGlobalDispatcher\s*\(/,
  },
];

/** A file may use fake timers only if it also puts the real ones back. */
const FAKE_TIMERS = /\bvi\s*\.\s*useFakeTimers\s*\(/;
const REAL_TIMERS = /\bvi\s*\.\s*useRealTimers\s*\(/;

const ALLOWED = new Set(['test/support/global-setup.ts', 'test/static/shared-workers.test.ts']);

async function tsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist-types') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await tsFiles(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** What of LEAKS (and fake timers left on) a file's text holds. */
export function leaksIn(text: string): string[] {
  const found = LEAKS.filter((l) => l.pattern.test(text)).map((l) => l.name);
  if (FAKE_TIMERS.test(text) && !REAL_TIMERS.test(text)) found.push('fake timers never put back (vi.useRealTimers)');
  return found;
}

describe('test files share a worker process safely', () => {
  it('the check finds each kind of leak, and not its look-alikes', () => {
    expect(leaksIn("vi.mock('@mcpx/db')")).toEqual(['a module mock (vi.mock, vi.doMock)']);
    expect(leaksIn("vi.stubEnv('LOG_LEVEL', 'debug')")).toEqual([
      'a stubbed global or variable (vi.stubEnv, vi.stubGlobal)',
    ]);
    expect(leaksIn("process.env.LOG_LEVEL = 'debug'")).toEqual(['a write to process.env']);
    expect(leaksIn("process.env['LOG_LEVEL'] ??= 'x'")).toEqual(['a write to process.env']);
    expect(leaksIn('delete process.env.NATS_URL')).toEqual(['a write to process.env']);
    expect(leaksIn('Object.assign(process.env, extra)')).toEqual(['a write to process.env']);
    expect(leaksIn("process.chdir('/')")).toEqual([
      'a process-wide change (process.chdir, process.umask, setGlobalDispatcher)',
    ]);
    expect(leaksIn('vi.useFakeTimers()')).toEqual(['fake timers never put back (vi.useRealTimers)']);
    expect(leaksIn('vi.useFakeTimers(); afterEach(() => vi.useRealTimers())')).toEqual([]);
    expect(leaksIn("const level = process.env.LOG_LEVEL === 'debug'; const env = { ...process.env, A: '1' };")).toEqual(
      [],
    );
  });

  it('no file the tests load leaves anything behind for the next file of its worker', async () => {
    const roots = ['test', 'libs', 'services', 'cli/src', 'console/src'];
    const files = (await Promise.all(roots.map((r) => tsFiles(join(ROOT, r))))).flat();
    expect(files.length).toBeGreaterThan(400);
    const offenders: string[] = [];
    for (const file of files) {
      const rel = relative(ROOT, file).split('\\').join('/');
      // A process's entry (main.ts) runs in a process of its own, never in a test worker.
      if (ALLOWED.has(rel) || rel.endsWith('/main.ts')) continue;
      for (const leak of leaksIn(await readFile(file, 'utf8'))) offenders.push(`${rel}: ${leak}`);
    }
    expect(offenders).toEqual([]);
  });
});
