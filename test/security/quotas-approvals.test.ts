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

/**
 * The same quota under a race: many always_ask calls of one agent at once, spread over two proxy
 * instances. The count and the creation are one step in Redis, so exactly the cap is recorded
 * and every other call is refused with quota_exceeded (before, each call counted the pending
 * list on its own and racing calls passed the cap by the few in flight).
 */
describe('quotas: pending approvals per agent under a race (two proxies)', () => {
  const CAP = 4;
  let system: ProxySystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    ({ system, upstream } = await startApprovalSystem({ proxies: 2, env: { QUOTA_PENDING_APPROVALS_PER_AGENT: String(CAP) } }));
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it(`${CAP * 6} racing calls of one agent record exactly ${CAP} approvals; the rest are quota_exceeded, none reaches the server`, async () => {
    const calls = upstream.stats.calls;
    const outcomes = await Promise.all(Array.from({ length: CAP * 6 }, (_, i) => system.callError('agent', `race-${i}`, 'db__drop_table', { table: `t${i}` })));
    const codes = outcomes.map((e) => e.code);
    expect(codes.filter((c) => c === 'approval_required')).toHaveLength(CAP);
    expect(codes.filter((c) => c === 'quota_exceeded')).toHaveLength(CAP * 5);
    expect(upstream.stats.calls).toBe(calls);
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    expect(approvals.filter((a) => a.agent === system.agentId('agent') && a.status === 'pending')).toHaveLength(CAP);
    // An approval decided frees exactly one place, also for a racing pair.
    const first = outcomes.find((e) => e.code === 'approval_required')?.details.approvalId;
    await system.api.act('ApproveToolCall', { approvalId: first });
    const again = await Promise.all([0, 1, 2].map((i) => system.callError('agent', `again-${i}`, 'db__drop_table', { table: `a${i}` })));
    expect(again.map((e) => e.code).sort()).toEqual(['approval_required', 'quota_exceeded', 'quota_exceeded']);
  });
});
