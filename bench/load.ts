// `pnpm bench load`: proxied calls/s with 1, 2 and 3 proxies, and the projector at 100,000 agents
// against bare JetStream publishes. It lives in the test package, which has the
// workspace libraries as dependencies; see test/ops/bench/load-bench.ts.
// The services run from their bundles, as the image runs them (BENCH_FROM_SOURCES=1: through tsx).
import { benchServiceForm } from './support/service-bundles.js';

process.stdout.write(`${await benchServiceForm()}\n`);
await import('../test/ops/bench/load-bench.js');
