import { describe, expect, it } from 'vitest';
import { WireError, type ApprovalView } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { approvalSystemPerSuite } from './approval-tools.js';

/**
 * The runtime's side of a human in the loop: `callAwaitingApproval` stops, waits for the owner's
 * decision (event or re-send), and runs the call once approved — still exactly once.
 */
describe('a call that waits for its approval (a modern server)', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started), { era: 'modern' });

  const input = (run: string, table: string) => ({
    account: system.account,
    agent: system.agentId('agent'),
    run,
    tool: 'db__drop_table',
    arguments: { table },
  });

  /** The pending approval of `run`, once the stopped call has recorded it. */
  const pending = (run: string): Promise<ApprovalView> =>
    eventually(
      async () =>
        (await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals.find(
          (a) => a.run === run && a.status === 'pending',
        ),
      15_000,
      `the approval of ${run}`,
    );

  it('runs the call once the owner approves (the decision event wakes it, long before the re-send)', async () => {
    const told: string[] = [];
    const before = upstream.stats.calls;
    const waiting = system.client.callAwaitingApproval(input('wait-1', 'users'), {
      waitMs: 60_000,
      pollMs: 60_000,
      onApprovalRequired: (id) => told.push(id),
    });
    const approval = await pending('wait-1');
    expect(upstream.stats.calls).toBe(before);
    await system.api.act('ApproveToolCall', { approvalId: approval.id });
    const { result } = await waiting;
    expect(result.text).toBe('dropped users');
    expect(told).toEqual([approval.id]);
    expect(upstream.stats.calls).toBe(before + 1);
  });

  it('answers approval_refused when the owner denies, and runs nothing', async () => {
    const before = upstream.stats.calls;
    const waiting = system.client.callAwaitingApproval(input('wait-2', 'orders'), { waitMs: 60_000, pollMs: 200 }).then(
      () => new Error('the call ran'),
      (err: unknown) => err,
    );
    const approval = await pending('wait-2');
    await system.api.act('DenyToolCall', { approvalId: approval.id });
    const err = await waiting;
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('approval_refused');
    expect((err as WireError).details.reason).toBe('denied');
    expect(upstream.stats.calls).toBe(before);
  });

  it('gives up after waitMs with the original approval_required, whose approval still works', async () => {
    const err = await system.client.callAwaitingApproval(input('wait-3', 'logs'), { waitMs: 300, pollMs: 100 }).then(
      () => new Error('the call ran'),
      (e: unknown) => e,
    );
    expect((err as WireError).code).toBe('approval_required');
    const id = (err as WireError).details.approvalId as string;
    await system.api.act('ApproveToolCall', { approvalId: id });
    const { result } = await system.client.call({ ...input('wait-3', 'logs'), approvalId: id });
    expect(result.text).toBe('dropped logs');
  });
});
