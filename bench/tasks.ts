// `pnpm bench tasks`: brokered tasks at scale; the run and what it measures: test/tasks/bench/tasks-bench.ts.
//   node scripts/run.mjs bench tasks   (BENCH_QUICK=1: 1,000 tasks, a shorter window)
import '../test/tasks/bench/tasks-bench.js';
