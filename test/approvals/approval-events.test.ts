import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalView } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { SseSubscriber } from '../support/sse-client.js';
import { approvalSystemPerSuite, stoppedCall } from './approval-tools.js';

/** An argument value that must never reach the event stream. */
const TABLE = 'payroll_7f3e91';

/**
 * `approval-requested` and `approval-decided` on `GET /v1/events`, end to end: a real call stopped
 * by the proxy shows up on the account's signed stream, and an owner's decision follows it; the
 * events name the call, never its arguments, and reach no other account.
 */
describe('approval events on the account event stream', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let stream: SseSubscriber;
  let stranger: SseSubscriber;
  let strangerApi: ApiClient;

  approvalSystemPerSuite((started) => ({ system, upstream } = started));

  beforeAll(async () => {
    stream = await SseSubscriber.open(system.api);
    strangerApi = new ApiClient(system.api.apiUrl);
    stranger = await SseSubscriber.open(strangerApi);
  });

  afterAll(async () => {
    await stream?.close();
    await stranger?.close();
  });

  it('a stopped call is announced; approving it is announced; the approved call then runs', async () => {
    const id = await stoppedCall(system, 'agent', 'ev-1', 'db__drop_table', { table: TABLE });
    const requested = await stream.waitFor('approval-requested', (d) => d.approvalId === id);
    // What both events say of the stopped call.
    const stopped = {
      approvalId: id,
      agent: system.agentId('agent'),
      run: 'ev-1',
      tool: 'db__drop_table',
      server: 'db',
    };
    expect(requested.data).toEqual({
      ...stopped,
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });

    const { approval } = await system.api.act<{ approval: ApprovalView }>('ApproveToolCall', { approvalId: id });
    const decided = await stream.waitFor('approval-decided', (d) => d.approvalId === id);
    expect(decided.data).toEqual({
      ...stopped,
      decision: 'approved',
      decidedAt: approval.decidedAt,
      expiresAt: approval.expiresAt,
    });
    const out = await system.call('agent', 'ev-1', 'db__drop_table', { table: TABLE }, { approvalId: id });
    expect(out.result.text).toBe(`dropped ${TABLE}`);
  });

  it('a denial is announced as denied', async () => {
    const id = await stoppedCall(system, 'agent', 'ev-2', 'db__drop_table', { table: TABLE });
    await stream.waitFor('approval-requested', (d) => d.approvalId === id);
    await system.api.act('DenyToolCall', { approvalId: id });
    const decided = await stream.waitFor('approval-decided', (d) => d.approvalId === id);
    expect(decided.data.decision).toBe('denied');
  });

  it('carries no argument value nor its hash, and reaches no other account', async () => {
    const id = await stoppedCall(system, 'agent', 'ev-3', 'db__drop_table', { table: TABLE });
    await stream.waitFor('approval-requested', (d) => d.approvalId === id);
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    const argsHash = approvals.find((a) => a.id === id)?.argsHash ?? '';
    expect(argsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(stream.raw).not.toContain(TABLE);
    expect(stream.raw).not.toContain(argsHash);
    expect(stream.raw).not.toContain('argsHash');
    expect(stream.raw).not.toContain('arguments');
    // The stranger's stream is live (its own event arrives after ours were published) but saw none of ours.
    await strangerApi.act('SetMcpServer', { name: 'mine', config: { url: upstream.url } });
    await stranger.waitFor('mcp-servers-changed', (d) => d.server === 'mine');
    expect(stranger.events.filter((e) => e.event.startsWith('approval-'))).toEqual([]);
  });
});
