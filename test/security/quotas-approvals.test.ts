import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalView } from '@mcpx/contracts';
import { loadConfig } from '@mcpx/config';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { startApprovalSystem, stoppedCall } from '../approvals/approval-tools.js';

const MAX = loadConfig('proxy', { OUTBOUND_PROFILE: 'local' }).quotas.pendingApprovalsPerAgent;

/**
 * Pending approvals per agent as an attack on the real proxy (NATS, Redis, Postgres, a real MCP
 * server): an agent asks for approvals until its quota is waiting; the next always_ask call fails
 * with quota_exceeded, no approval is recorded, the server is not called, and another agent of
 * the account still asks.
 */
describe('quotas: pending approvals per agent (proxy)', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    ({ system, upstream } = await startApprovalSystem());
    await system.createAgent('other', ['db'], 3);
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  const pendingOf = async (agent: string): Promise<ApprovalView[]> => {
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    return approvals.filter((a) => a.agent === system.agentId(agent) && a.status === 'pending');
  };

  it(`the ${MAX + 1}st waiting approval of one agent is refused; other agents ask; a decision frees a place`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < MAX; i++) ids.push(await stoppedCall(system, 'agent', `r${i}`, 'db__drop_table', { table: `t${i}` }));
    expect(await pendingOf('agent')).toHaveLength(MAX);
    const calls = upstream.stats.calls;
    const refused = await system.callError('agent', 'r-over', 'db__drop_table', { table: 'over' });
    expect(refused.code).toBe('quota_exceeded');
    expect(refused.details).toMatchObject({ field: 'agent', limit: 'pending_approvals_per_agent', max: MAX });
    expect(refused.retryable).toBe(false);
    expect(upstream.stats.calls).toBe(calls);
    expect(await pendingOf('agent')).toHaveLength(MAX);
    // Calls that need no human still run for that agent.
    expect((await system.call('agent', 'r-act', 'db__echo', { text: 'still' })).result.text).toBe('echo: still');
    // Another agent of the account is not held by this one's queue.
    expect(await stoppedCall(system, 'other', 'o1', 'db__drop_table', { table: 'x' })).toMatch(/^apr_/);
    // Denying one gives the agent a place again.
    await system.api.act('DenyToolCall', { approvalId: ids[0] });
    expect(await stoppedCall(system, 'agent', 'r-after', 'db__drop_table', { table: 'after' })).toMatch(/^apr_/);
  });
});
