// `pnpm bench tasks`: brokered tasks at scale; the run and what it measures: test/tasks/bench/tasks-bench.ts.
//   node scripts/run.mjs bench tasks   (BENCH_QUICK=1: 1,000 tasks, a shorter window)
// The services run from their bundles, as the image runs them (BENCH_FROM_SOURCES=1: through tsx).
import { benchServiceForm } from './support/service-bundles.js';

process.stdout.write(`${await benchServiceForm()}\n`);
await import('../test/tasks/bench/tasks-bench.js');
