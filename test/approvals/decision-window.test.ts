import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalView } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { SseSubscriber } from '../support/sse-client.js';
import { approvalSystemPerSuite, stoppedCall } from './approval-tools.js';

/** Sleeps until the clock reads `at` (epoch ms): the approval windows are measured on it. */
async function until(at: number): Promise<void> {
  const ms = at - Date.now();
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
}

/**
 * A late decision still leaves the runtime a full window: an approval waits APPROVAL_TTL_MS for a
 * decision, and once approved the call may be re-sent within APPROVAL_TTL_MS of the decision,
 * even after creation + TTL has passed. Still once, and only for the call it was given for.
 */
describe('the window to re-send an approved call starts at the decision', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let stream: SseSubscriber;
  const TTL_MS = 3_000;

  approvalSystemPerSuite((started) => ({ system, upstream } = started), { env: { APPROVAL_TTL_MS: String(TTL_MS) } });

  beforeAll(async () => {
    stream = await SseSubscriber.open(system.api);
  });

  afterAll(async () => {
    await stream?.close();
  });

  it('approved near the end of the pending window, re-sent after creation + TTL: runs once, a replay is refused', async () => {
    const args = { table: 'late_decision' };
    const id = await stoppedCall(system, 'agent', 'w1', 'db__drop_table', args);
    const pending = (await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals.find(
      (a) => a.id === id,
    );
    expect(pending?.status).toBe('pending');
    const decisionDeadline = Date.parse(pending!.expiresAt);
    expect(decisionDeadline - Date.parse(pending!.createdAt)).toBe(TTL_MS);

    // The owner decides late: with most of the pending window gone.
    await until(decisionDeadline - 1_000);
    const { approval } = await system.api.act<{ approval: ApprovalView }>('ApproveToolCall', { approvalId: id });
    expect(approval.status).toBe('approved');
    const useDeadline = Date.parse(approval.expiresAt);
    expect(useDeadline - Date.parse(approval.decidedAt!)).toBe(TTL_MS);
    expect(useDeadline).toBeGreaterThan(decisionDeadline);
    // The approval-decided event tells a waiting runtime the same window.
    const decided = await stream.waitFor('approval-decided', (d: { approvalId?: string }) => d.approvalId === id);
    expect(decided.data).toMatchObject({
      decision: 'approved',
      decidedAt: approval.decidedAt,
      expiresAt: approval.expiresAt,
    });

    // Re-sent once the original creation + TTL has passed (and the decision's window has not).
    await until(decisionDeadline + 200);
    const before = upstream.stats.calls;
    const out = await system.call('agent', 'w1', 'db__drop_table', args, { approvalId: id });
    expect(out.result.text).toBe('dropped late_decision');
    expect(upstream.stats.calls).toBe(before + 1);

    // Single use is unchanged: the same approval runs nothing more.
    const replay = await system.callError('agent', 'w1', 'db__drop_table', args, { approvalId: id });
    expect(replay.code).toBe('approval_refused');
    expect(replay.details.reason).toBe('used');
    expect(upstream.stats.calls).toBe(before + 1);
  });
});
