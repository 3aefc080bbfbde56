import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order files start in, longest first, so that the few long ones overlap everything else
 * instead of running alone at the end (a fresh clone has no timings for vitest to sort by, and
 * its fallback, larger files first, starts the short static checks last):
 * 0. the static checks (tsc -b, eslint: minutes of CPU), the conformance runs, and the two-minute
 *    soak and the multi-node run (small files that vitest's size order would start last);
 * 1. the cross-service tests under test/ (real services, servers and processes);
 * 2. the unit tests beside the code (milliseconds each: they fill the gaps at the end).
 * Within a group vitest's own order holds (its recorded durations when it has them).
 */
const LONG_OPS = new Set(['test/ops/soak.test.ts', 'test/ops/multi-node.test.ts']);

export function startGroup(file: string): number {
  if (file.startsWith('test/static/') || file.startsWith('test/conformance/') || LONG_OPS.has(file)) return 0;
  if (file.startsWith('test/')) return 1;
  return 2;
}

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const group = new Map(sorted.map((s) => [s, startGroup(relative(root, s.moduleId).split('\\').join('/'))]));
    // Array.prototype.sort is stable: vitest's order is kept within a group.
    return [...sorted].sort((a, b) => group.get(a)! - group.get(b)!);
  }
}
