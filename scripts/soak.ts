// `pnpm soak --minutes N` (or `npm run soak -- --minutes N`): mixed load on the whole stack for N
// minutes; prints `N errors`, the p99 drift and each service's memory growth, and exits non-zero
// on an error or on growth beyond the bound. It lives in the test package (the workspace libraries
// are its dependencies); see test/ops/bench/soak.ts.
import '../test/ops/bench/soak.js';
