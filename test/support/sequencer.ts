import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that took longest in a whole run (2 workers on a loaded 2-core box, 2026-12-06; each
 * file's seconds from the end of the one before it in its worker, set-up included; BENCHMARKS.md,
 * "The test suite"), longest first. They start first, in
 * this order, so that none is left to run alone at the end: a fresh clone has no timings for
 * vitest to sort by, and its fallback, larger files first, started the two-minute soak among the
 * first and the longest file of all (the static checks) only fourth. A file missing here (renamed,
 * removed) is simply not there; a new long one belongs in the list.
 */
export const LONGEST: ReadonlyArray<string> = [
  'test/static/static-checks.test.ts', // 203 s
  'test/ops/faults/registry-killed.test.ts', // 91–165 s
  'test/endpoint/endpoint-inspector.test.ts', // 102 s
  'test/conformance/conformance.test.ts', // 91 s
  'test/security/nats-start.test.ts', // 86 s
  'test/console/console-browser.test.ts', // 66 s
  'test/endpoint/endpoint-tasks-conformance.test.ts', // 56 s
  'test/pins/pins.test.ts', // 51 s
  'test/tasks/tasks-cli.test.ts', // 50 s
  'test/inputs/inputs-cli.test.ts', // 49 s
  'test/ops/faults/infrastructure.test.ts', // 48 s
  'test/endpoint/endpoint-e2e.test.ts', // 47 s
  'test/conformance/server-conformance.test.ts', // 47 s
  'test/endpoint/endpoint-oauth.test.ts', // 45 s
  'test/e2e/walking-skeleton.test.ts', // 45 s
  'test/tasks/tasks.test.ts', // 43 s
  'test/registry/secrets.test.ts', // 42 s
  'test/ops/faults/upstream.test.ts', // 42 s
];

/**
 * The soak (two minutes of steady load, its p99 and errors measured) starts right after the first
 * wave, not in it: in the first minute every worker starts services, the static checks start four
 * compilers, and the soak's first window measured that start-up (p99 17 s) instead of the stack.
 */
export const AFTER_FIRST_WAVE: ReadonlyArray<string> = ['test/ops/soak.test.ts'];

/**
 * The order of the rest, by group:
 * 0. the other static checks, the conformance runs and the multi-node run (small files that
 *    vitest's size order would start last);
 * 1. the cross-service tests under test/ (real services, servers and processes);
 * 2. the unit tests beside the code (milliseconds each: they fill the gaps at the end).
 * Within a group vitest's own order holds (its recorded durations when it has them).
 */
export function startGroup(file: string): number {
  if (file.startsWith('test/static/') || file.startsWith('test/conformance/') || file === 'test/ops/multi-node.test.ts')
    return 0;
  if (file.startsWith('test/')) return 1;
  return 2;
}

/**
 * The start order of `files` (paths relative to the root) for `workers` files at a time: the
 * longest first, the soak after the first wave, then the groups.
 */
export function startOrder(files: readonly string[], workers: number): string[] {
  const present = new Set(files);
  const first = LONGEST.filter((f) => present.has(f));
  const later = AFTER_FIRST_WAVE.filter((f) => present.has(f));
  const placed = new Set([...first, ...later]);
  // Array.prototype.sort is stable: the given order is kept within a group.
  const rest = files.filter((f) => !placed.has(f)).sort((a, b) => startGroup(a) - startGroup(b));
  const order = [...first, ...rest];
  order.splice(Math.min(Math.max(1, workers), order.length), 0, ...later);
  return order;
}

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const byPath = new Map(sorted.map((s) => [relative(root, s.moduleId).split('\\').join('/'), s]));
    if (byPath.size !== sorted.length) return sorted; // one file in two projects: vitest's order
    const workers = Number(this.ctx.config.maxWorkers) || 1;
    return startOrder([...byPath.keys()], workers).map((f) => byPath.get(f)!);
  }
}
