import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASK_SCENARIOS } from '../conformance/tasks-scenarios.js';
import { startConformanceTasksUpstream } from '../servers/conformance-tasks-upstream.js';
import { startTokenFront } from './conformance-front.js';
import { runServerScenario } from './endpoint-conformance.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * The conformance suite's tasks scenarios (SEP-2663, the 2026-07-28 tasks extension) through the
 * agent endpoint's per-server face, whose tools keep their server's names (the scenarios call
 * their fixtures by name), in front of a modern fixture server speaking the extension. Each
 * scenario passes, or fails exactly the checks listed with their reason (../conformance/tasks-scenarios.ts;
 * tasks-status-notifications the suite skips itself, pending its listen-stream rewrite: docs/tasks.md#conformance).
 */
describe('tasks conformance of the agent endpoint (2026-07-28 tasks extension)', () => {
  let sys: EndpointSystem;
  let upstream: { url: string; close(): Promise<void> };
  let front: { url: string; close(): Promise<void> };
  let url: string;

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([
      startEndpointSystem({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' } }),
      startConformanceTasksUpstream(),
    ]);
    await sys.system.setServer('fixtures', upstream.url);
    const agent = await sys.system.createAgent('conformance', ['fixtures'], 4);
    const { token } = await sys.token('conformance');
    front = await startTokenFront(sys.endpoint.url, token);
    url = `${front.url}/v1/agents/${agent}/servers/fixtures/mcp`;
  }, 120_000);

  afterAll(async () => {
    await front?.close();
    await sys?.stop();
    await upstream?.close();
  });

  it.each(TASK_SCENARIOS.map((s) => [s.scenario, s] as const))(
    '%s',
    async (_name, s) => {
      // Extension scenarios are off the spec timeline: run without a spec version.
      const out = await runServerScenario(url, s.scenario);
      // A scenario the suite skips scores nothing; should it start scoring, the list is updated.
      if (s.skipped === true) expect(out.total, out.output.slice(-3000)).toBe(0);
      else expect(out.total, out.output.slice(-3000)).toBeGreaterThan(0);
      if (s.why !== undefined) expect(s.why).not.toBe('');
      expect(out.failing.sort(), out.output.slice(-4000)).toEqual([...(s.failing ?? [])].sort());
    },
    200_000,
  );
});
