/**
 * The multi-node run in `npm test`: a three-node NATS cluster with R3
 * streams, two registries, two projectors and three proxies; one NATS node and one proxy killed
 * mid-load and restarted. test/ops/support/multi-node-run.ts says what it checks;
 * `npm run bench -- multi-node [--phase-ms N]` runs it longer by hand.
 */
import { describe, expect, it } from 'vitest';
import { available } from './support/infra.js';
import { runMultiNode } from './support/multi-node-run.js';

describe.skipIf(!available().nats)('multi-node: a NATS node and a proxy killed mid-load', () => {
  it('calls go on, no agent-tools-changed lost, every run completes, accounts stay apart', async () => {
    const r = await runMultiNode({ accounts: 3, phaseMs: 5_000, callsPerRun: 5, concurrency: 6 });
    expect(r.isolationViolations).toBe(0);
    expect(r.eventGaps).toEqual([]);
    expect(r.eventsChecked).toBeGreaterThan(0);
    expect(r.runsCompleted).toBe(r.runsStarted);
    expect(r.summary.ok).toBeGreaterThan(100);
    expect(r.discoveries).toBeGreaterThan(3);
    // Calls went on through the kill: no stretch without an answer longer than the liveness check and a retry.
    expect(r.longestGapMs).toBeLessThan(20_000);
  }, 240_000);
});
