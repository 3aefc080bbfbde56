import { describe, expect, it } from 'vitest';
import { REVISIONS, baselineReasons, runConformance } from './run-conformance.js';

/** The stderr sections of the clients that failed, as the conformance tool printed them (bounded). */
function clientErrors(output: string): string {
  const parts = output
    .split('Client exited with code')
    .slice(1)
    .map((p) => p.slice(0, 600).trim());
  return parts.join('\n---\n').slice(0, 6000);
}

/**
 * The official client conformance requirement sets as a gate: each revision runs against its
 * checked-in baseline, so a scenario that starts failing (or a baseline entry that starts
 * passing and should be removed) fails `npm test`.
 */
describe.each(REVISIONS)('MCP client conformance, requirements %s', (revision) => {
  it('fails only the scenarios its baseline lists, each with a reason', async () => {
    const reasons = baselineReasons(revision);
    for (const [entry, why] of reasons) expect(why, `${entry} needs a reason in the baseline`).not.toBe('');
    const run = await runConformance(revision, { baseline: true });
    expect(run.scenarios.length).toBeGreaterThan(0);
    // On a failure, the clients' stderr says why (the tool prints it per failed client).
    expect({ unexpected: run.unexpectedFailures, stale: run.staleEntries }, clientErrors(run.output)).toEqual({
      unexpected: [],
      stale: [],
    });
    expect(run.exitCode, run.output.slice(-3000)).toBe(0);
  }, 400_000);
});
