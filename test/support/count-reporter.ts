import type { Reporter, TestModule } from 'vitest/node';

/** Prints the plain closing line `N passed, N failed[, N skipped]` that CI reads, after the tests that failed and those that passed only on a retry. */
export default class CountReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const flaky: string[] = [];
    const failures: string[] = [];
    for (const mod of modules) {
      let failedHere = 0;
      for (const test of mod.children.allTests()) {
        const result = test.result();
        const state = result.state;
        if (state === 'passed' && test.diagnostic()?.flaky === true) {
          // What the failed attempt threw (kept on a retried test's result), so the flake can be read from the log.
          const first = result.errors?.[0];
          const why = first === undefined ? '' : `\n  first attempt: ${firstLine(first.message)}`;
          flaky.push(`${mod.moduleId} > ${test.fullName}${why}`);
        }
        if (state === 'passed') passed++;
        else if (state === 'failed') {
          failedHere++;
          failures.push(`${mod.moduleId} > ${test.fullName}\n  ${firstLine(result.errors?.[0]?.message)}`);
        } else skipped++;
      }
      // A file that failed with no failed test (its import, or a beforeAll whose failure skipped
      // every test) is one failure: the line must never read "0 failed" for a failed run.
      failed += failedHere > 0 ? failedHere : mod.state() === 'failed' ? 1 : 0;
    }
    failed += errors.length;
    // Named again at the end, whatever other reporter ran (its list can be far above in a long log).
    for (const name of failures) process.stdout.write(`\nfailed: ${name}`);
    // Named, never hidden: a test that passed only on its retry (CI's `retry: 1`) is a flake to fix.
    for (const name of flaky) process.stdout.write(`\npassed on a retry (a flake to fix): ${name}`);
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\n${passed} passed, ${failed} failed${tail}\n`);
  }
}

/** The first line of an error's message, cut to 300 characters. */
function firstLine(message: string | undefined): string {
  return (message ?? '(no message)').split('\n')[0]!.slice(0, 300);
}
