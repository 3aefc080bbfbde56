/**
 * `pnpm soak --minutes N [--max-growth-mib M]`: the soak of
 * test/ops/support/soak-run.ts for N minutes. Prints the report (its last line `N errors`) and
 * exits non-zero on any error or bound broken (SOAK_BOUNDS: RSS growth per service, p99 drift).
 */
import { parseArgs } from 'node:util';
import { runSoak, SOAK_BOUNDS } from '../support/soak-run.js';

const { values } = parseArgs({ options: { minutes: { type: 'string' }, 'max-growth-mib': { type: 'string' } } });
const minutes = Number(values.minutes ?? 2);
if (!(minutes > 0)) throw new Error('--minutes N (N > 0)');
const maxGrowthMiB = Number(values['max-growth-mib'] ?? SOAK_BOUNDS.maxGrowthMiB);

const report = await runSoak({ minutes, maxGrowthMiB });
process.exit(report.failures.length > 0 ? 1 : 0);
