import { describe, expect, it } from 'vitest';
import { decodePayload, type ApprovalRequestedEvent, type ApprovalView } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import type { TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { actionError, approvalSystemPerSuite, stoppedCall } from './approval-tools.js';

describe.each(['modern', 'legacy'] as const)(
  'always_ask against a %s server: a destructive tool stops for a human, every call',
  (era) => {
    let system: ProxySystem;
    let upstream: TestMcpServer;

    approvalSystemPerSuite((started) => ({ system, upstream } = started), { era });

    it('inherits the level from annotations: destructive asks, read-only and unhinted act', async () => {
      const { tools } = await system.api.act<{ tools: Array<{ name: string; permission: string }> }>('ListAgentTools', {
        agent: system.agentId('agent'),
      });
      const levels = Object.fromEntries(tools.map((t) => [t.name, t.permission]));
      expect(levels).toEqual({ db__drop_table: 'always_ask', db__add: 'act', db__echo: 'act' });
      const before = upstream.stats.calls;
      expect((await system.call('agent', 'r-act', 'db__add', { a: 2, b: 3 })).result.result).toEqual({ sum: 5 });
      expect((await system.call('agent', 'r-act', 'db__echo', { text: 'hi' })).result.text).toBe('echo: hi');
      expect(upstream.stats.calls).toBe(before + 2);
    });

    it('stops the call without reaching the server, publishes the request, and lists it', async () => {
      const events: ApprovalRequestedEvent[] = [];
      const sub = system.nc.subscribe(system.subjects.approvalRequested(system.account), {
        callback: (_err, msg) => {
          events.push(decodePayload<ApprovalRequestedEvent>(msg.data));
        },
      });
      await system.nc.flush();
      const before = upstream.stats.calls;
      const id = await stoppedCall(system, 'agent', 'r1', 'db__drop_table', { table: 'users' });
      expect(upstream.stats.calls).toBe(before);
      expect(id).toMatch(/^apr_/);
      await system.nc.flush();
      await new Promise((r) => setTimeout(r, 100));
      sub.unsubscribe();
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        account: system.account,
        approvalId: id,
        run: 'r1',
        tool: 'db__drop_table',
        server: 'db',
        remoteName: 'drop_table',
      });
      expect(events[0]!.argsHash).toMatch(/^[0-9a-f]{64}$/);
      const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
      const mine = approvals.find((a) => a.id === id);
      expect(mine).toMatchObject({
        status: 'pending',
        run: 'r1',
        tool: 'db__drop_table',
        arguments: { table: 'users' },
      });
      // Re-sent before anyone decided: still waiting, and still not called.
      const waiting = await system.callError('agent', 'r1', 'db__drop_table', { table: 'users' }, { approvalId: id });
      expect(waiting.code).toBe('approval_required');
      expect(upstream.stats.calls).toBe(before);
    });

    it('runs an approved call once; a replay of the approval is refused', async () => {
      const id = await stoppedCall(system, 'agent', 'r2', 'db__drop_table', { table: 'orders' });
      const { approval } = await system.api.act<{ approval: ApprovalView }>('ApproveToolCall', { approvalId: id });
      expect(approval.status).toBe('approved');
      expect(
        (await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals.some((a) => a.id === id),
      ).toBe(false);
      const before = upstream.stats.calls;
      const out = await system.call('agent', 'r2', 'db__drop_table', { table: 'orders' }, { approvalId: id });
      expect(out.result.text).toBe('dropped orders');
      expect(upstream.stats.calls).toBe(before + 1);
      const replay = await system.callError('agent', 'r2', 'db__drop_table', { table: 'orders' }, { approvalId: id });
      expect(replay.code).toBe('approval_refused');
      expect(replay.details.reason).toBe('used');
      expect(upstream.stats.calls).toBe(before + 1);
      // Inside the run that just had an approved call, the next call stops again.
      await stoppedCall(system, 'agent', 'r2', 'db__drop_table', { table: 'orders' });
      expect(upstream.stats.calls).toBe(before + 1);
      // A decided approval cannot be decided again.
      expect((await actionError(system.api.act('DenyToolCall', { approvalId: id }))).code).toBe('conflict');
    });

    it('refuses a denied approval', async () => {
      const id = await stoppedCall(system, 'agent', 'r3', 'db__drop_table', { table: 'x' });
      expect(
        (await system.api.act<{ approval: ApprovalView }>('DenyToolCall', { approvalId: id })).approval.status,
      ).toBe('denied');
      const before = upstream.stats.calls;
      const err = await system.callError('agent', 'r3', 'db__drop_table', { table: 'x' }, { approvalId: id });
      expect(err.code).toBe('approval_refused');
      expect(err.details.reason).toBe('denied');
      expect(upstream.stats.calls).toBe(before);
    });

    it('refuses an approval used for other arguments or another run, and keeps it for its own call', async () => {
      const id = await stoppedCall(system, 'agent', 'r4', 'db__drop_table', { table: 'a' });
      await system.api.act('ApproveToolCall', { approvalId: id });
      const before = upstream.stats.calls;
      const otherArgs = await system.callError('agent', 'r4', 'db__drop_table', { table: 'b' }, { approvalId: id });
      expect(otherArgs.code).toBe('approval_refused');
      expect(otherArgs.details.reason).toBe('mismatch');
      const otherRun = await system.callError(
        'agent',
        'r4-other',
        'db__drop_table',
        { table: 'a' },
        { approvalId: id },
      );
      expect(otherRun.details.reason).toBe('mismatch');
      expect(upstream.stats.calls).toBe(before);
      expect((await system.call('agent', 'r4', 'db__drop_table', { table: 'a' }, { approvalId: id })).result.text).toBe(
        'dropped a',
      );
      expect(upstream.stats.calls).toBe(before + 1);
    });

    it('refuses an unknown approval and an approval of another account', async () => {
      const unknown = await system.callError(
        'agent',
        'r5',
        'db__drop_table',
        { table: 'a' },
        { approvalId: 'apr_doesnotexist' },
      );
      expect(unknown.code).toBe('approval_refused');
      expect(unknown.details.reason).toBe('unknown');
      const id = await stoppedCall(system, 'agent', 'r5', 'db__drop_table', { table: 'a' });
      const stranger = new ApiClient(system.api.apiUrl);
      expect((await actionError(stranger.act('ApproveToolCall', { approvalId: id }))).code).toBe('not_found');
      expect((await stranger.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals).toEqual([]);
    });

    it('lets only an OWNER decide: WRITER and AGENT signers are refused', async () => {
      const id = await stoppedCall(system, 'agent', 'r6', 'db__drop_table', { table: 'a' });
      for (const role of ['WRITER', 'AGENT'] as const) {
        const key = generateKeyPair();
        await system.api.act('AuthorizeSigner', {
          principal: key.principal,
          role,
          ...(role === 'AGENT' ? { agents: ['agent'] } : {}),
        });
        const signer = new ApiClient(system.api.apiUrl, key, system.account);
        expect((await actionError(signer.act('ApproveToolCall', { approvalId: id }))).code).toBe('forbidden');
        expect((await actionError(signer.act('DenyToolCall', { approvalId: id }))).code).toBe('forbidden');
        expect(
          (await actionError(signer.act('SetToolPermission', { server: 'db', tool: 'drop_table', permission: 'act' })))
            .code,
        ).toBe('forbidden');
      }
      // An OWNER signer (not the account key) may.
      const owner = generateKeyPair();
      await system.api.act('AuthorizeSigner', { principal: owner.principal, role: 'OWNER' });
      const { approval } = await new ApiClient(system.api.apiUrl, owner, system.account).act<{
        approval: ApprovalView;
      }>('ApproveToolCall', { approvalId: id });
      expect(approval).toMatchObject({ status: 'approved', decidedBy: owner.principal });
    });
  },
);
