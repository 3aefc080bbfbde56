import { describe, expect, it } from 'vitest';
import type { ApprovalView } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { actionError, approvalSystemPerSuite, stoppedCall } from './approval-tools.js';

/**
 * What a human approves is what they were shown: the whole arguments, keys sorted, never a cut;
 * arguments too large to show cannot be approved at all.
 */
describe('approvals show the whole canonical arguments, or refuse to approve', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started));

  const pending = async (id: string): Promise<ApprovalView> => {
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    const found = approvals.find((a) => a.id === id);
    if (found === undefined) throw new Error(`approval ${id} is not listed`);
    return found;
  };

  it("lists the arguments whole, with every object's keys sorted, whatever order the runtime sent", async () => {
    const long = 'y'.repeat(5_000);
    const id = await stoppedCall(system, 'agent', 'r-sorted', 'db__drop_table', {
      zeta: { b: 1, a: 2 },
      table: 'users',
      alpha: long,
    });
    const view = await pending(id);
    expect(view.arguments).toEqual({ alpha: long, table: 'users', zeta: { a: 2, b: 1 } });
    expect(Object.keys(view.arguments as object)).toEqual(['alpha', 'table', 'zeta']);
    expect(Object.keys((view.arguments as { zeta: object }).zeta)).toEqual(['a', 'b']);
  });

  it('refuses to approve arguments too large to show, lets them be denied, and calls nothing', async () => {
    const before = upstream.stats.calls;
    const id = await stoppedCall(system, 'agent', 'r-big', 'db__drop_table', {
      table: 'users',
      note: 'z'.repeat(70 * 1024),
    });
    expect((await pending(id)).arguments).toBeUndefined();
    const refused = await actionError(system.api.act('ApproveToolCall', { approvalId: id }));
    expect(refused.code).toBe('conflict');
    expect(refused.details).toMatchObject({ field: 'approvalId', reason: 'arguments_not_shown' });
    // Still pending: the owner can deny it.
    expect((await pending(id)).status).toBe('pending');
    const { approval } = await system.api.act<{ approval: ApprovalView }>('DenyToolCall', { approvalId: id });
    expect(approval.status).toBe('denied');
    expect(upstream.stats.calls).toBe(before);
  });
});
