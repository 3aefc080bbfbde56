/**
 * Two minutes of the soak in `npm test`: mixed load (calls, discoveries,
 * grants, approvals) on the services as processes. Fails on any error (an upstream socket closed
 * under a call on an overloaded box is counted apart, bounded at 1 % of the calls), a service that exits, a
 * window that answers no call, p99 drift beyond SOAK_BOUNDS (rising in every window, the last
 * both ×4 and +2 s over the first after warm-up) or RSS growth beyond SOAK_BOUNDS.maxGrowthMiB per service. It
 * prints its report, `N errors` last. test/ops/support/soak-run.ts has the load.
 */
import { describe, expect, it } from 'vitest';
import { runSoak } from './support/soak-run.js';

describe('soak: two minutes of mixed load', () => {
  it('no error, p99 drift and each service RSS growth within the stated bounds', async () => {
    const r = await runSoak({ minutes: 2, log: (line) => console.log(line) });
    expect(r.errors).toEqual([]);
    expect(r.failures).toEqual([]);
    expect(r.lines.at(-1)).toBe('0 errors');
    // Every kind of load ran (a soak that did nothing would pass the bounds).
    expect(r.counts.calls).toBeGreaterThan(100);
    expect(r.counts.discoveries).toBeGreaterThan(10);
    expect(r.counts.grants).toBeGreaterThan(10);
    expect(r.counts.approvals).toBeGreaterThan(5);
    expect(r.rss).toHaveLength(4);
  }, 300_000);
});
