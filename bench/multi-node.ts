// The multi-node run by hand: a three-node NATS cluster on loopback (R3
// streams), two registries, two projectors, three proxies; one NATS node and one proxy killed
// mid-load and restarted. Prints calls/s, p50/p99, errors and the time to recover.
//   npm run bench -- multi-node [--phase-ms 20000] [--accounts 5] [--concurrency 8]
// Needs the machine's Postgres (DATABASE_URL) and Redis (REDIS_URL), and nats-server on the PATH.
import { parseArgs } from 'node:util';
import { runMultiNode } from '../test/ops/support/multi-node-run.js';
import { benchServiceForm } from './support/service-bundles.js';

// The services run from their bundles, as the image runs them (BENCH_FROM_SOURCES=1: through tsx).
process.stdout.write(`${await benchServiceForm()}\n`);

const { values } = parseArgs({
  options: { 'phase-ms': { type: 'string' }, accounts: { type: 'string' }, concurrency: { type: 'string' } },
});
const r = await runMultiNode({
  phaseMs: Number(values['phase-ms'] ?? 10_000),
  accounts: Number(values.accounts ?? 3),
  concurrency: Number(values.concurrency ?? 6),
});
const failed = r.isolationViolations > 0 || r.eventGaps.length > 0 || r.runsCompleted !== r.runsStarted;
if (r.eventGaps.length > 0) process.stdout.write(`event gaps:\n${r.eventGaps.join('\n')}\n`);
process.exit(failed ? 1 : 0);
