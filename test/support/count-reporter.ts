import type { Reporter, TestModule } from 'vitest/node';

/** Prints the plain closing line `N passed, N failed[, N skipped]` that CI reads. */
export default class CountReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of modules) {
      let failedHere = 0;
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedHere++;
        else skipped++;
      }
      // A file that failed with no failed test (its import, or a beforeAll whose failure skipped
      // every test) is one failure: the line must never read "0 failed" for a failed run.
      failed += failedHere > 0 ? failedHere : mod.state() === 'failed' ? 1 : 0;
    }
    failed += errors.length;
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\n${passed} passed, ${failed} failed${tail}\n`);
  }
}
