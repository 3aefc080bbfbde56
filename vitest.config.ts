import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import LongFirstSequencer from './test/support/sequencer.js';

/**
 * Test files at a time. Most of them wait on I/O (real services, servers, child processes), so
 * twice the cores, at least 2 and at most 8, keeps a small machine busy without starving it;
 * MCPX_TEST_WORKERS sets it (1: one file at a time).
 */
const workers = Number(process.env.MCPX_TEST_WORKERS ?? '') || Math.min(8, Math.max(2, availableParallelism() * 2));

export default defineConfig({
  test: {
    include: ['libs/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'cli/src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist-types/**'],
    globalSetup: ['./test/support/global-setup.ts'],
    // Fails a file that leaves the worker's timers replaced (./test/support/worker-guard.ts).
    setupFiles: ['./test/support/worker-guard.ts'],
    reporters: ['default', './test/support/count-reporter.ts'],
    // Bounds, not expectations: on a busy 2-core machine with files side by side, a test that
    // starts a dozen CLI processes or a service system takes several times what it takes alone.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // In CI (CI=true) a failed test runs once more: with four files side by side on two cores a
    // few real-process tests (a chaos run, a background re-probe counted) miss a window now and
    // then. A test that fails twice fails the run; one that passed on its retry is named by the
    // count reporter as a flake to fix.
    retry: process.env.CI === 'true' ? 1 : 0,
    pool: 'forks',
    maxWorkers: workers,
    // A worker process runs file after file with the modules it has loaded: the services, the SDKs
    // and the test servers are imported once per worker, not once per file (that import was most
    // of a run's time on a small machine). The files share no state but what they make and stop
    // themselves: nothing is mocked or stubbed, no test sets process.env, and telemetry's global
    // providers are replaced by each set-up. MCPX_TEST_ISOLATE=1 gives each file a fresh process
    // (to tell a leak between files from a failure of the file's own).
    isolate: process.env.MCPX_TEST_ISOLATE === '1',
    sequence: { sequencer: LongFirstSequencer },
  },
});
