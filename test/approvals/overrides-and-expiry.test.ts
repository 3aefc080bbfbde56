import { describe, expect, it } from 'vitest';
import type { ApprovalView, RedactedMcpServer } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { actionError, approvalSystemPerSuite, stoppedCall } from './approval-tools.js';

type ToolRow = { name: string; permission: string; cid: string };

describe('owner overrides and approval expiry', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  const TTL_MS = 1_500;

  approvalSystemPerSuite((started) => ({ system, upstream } = started), { env: { APPROVAL_TTL_MS: String(TTL_MS) } });

  const tool = async (name: string): Promise<ToolRow> => {
    const { tools } = await system.api.act<{ tools: ToolRow[] }>('ListAgentTools', { agent: system.agentId('agent') });
    const t = tools.find((x) => x.name === name);
    if (t === undefined) throw new Error(`no ${name}`);
    return t;
  };

  it('turns a read-only tool into always_ask and back: a new contract (CID) each time', async () => {
    const inherited = await tool('db__add');
    expect(inherited.permission).toBe('act');
    const set = await system.api.act('SetToolPermission', { server: 'db', tool: 'add', permission: 'always_ask' });
    expect(set).toMatchObject({
      server: 'db',
      tool: 'add',
      permission: 'always_ask',
      inherited: 'act',
      overridden: true,
    });
    const asked = await eventually(
      async () => {
        const t = await tool('db__add');
        return t.permission === 'always_ask' ? t : undefined;
      },
      15_000,
      'the override projected',
    );
    expect(asked.cid).not.toBe(inherited.cid);
    const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    expect(servers[0]!.tools.find((t) => t.name === 'add')).toMatchObject({
      permission: 'always_ask',
      permissionOverridden: true,
      inheritedPermission: 'act',
    });
    expect(servers[0]!.tools.find((t) => t.name === 'drop_table')).toMatchObject({ permission: 'always_ask' });
    // The proxy follows the new document: the read-only tool now stops for a human.
    const before = upstream.stats.calls;
    await eventually(
      async () => {
        const err = await system.callError('agent', 'o1', 'db__add', { a: 1, b: 2 }).catch(() => undefined);
        return err?.code === 'approval_required' ? true : undefined;
      },
      15_000,
      'the proxy to ask',
    );
    expect(upstream.stats.calls).toBe(before);

    await system.api.act('SetToolPermission', { server: 'db', tool: 'add', permission: null });
    const back = await eventually(
      async () => {
        const t = await tool('db__add');
        return t.permission === 'act' ? t : undefined;
      },
      15_000,
      'back to inherited',
    );
    expect(back.cid).toBe(inherited.cid);
    await eventually(
      async () => {
        const out = await system.call('agent', 'o1', 'db__add', { a: 1, b: 2 }).catch(() => undefined);
        return out?.result.text === '3' ? true : undefined;
      },
      15_000,
      'the proxy to act again',
    );
  });

  it('keeps an override across a refresh, and lets the owner waive a destructive hint', async () => {
    await system.api.act('SetToolPermission', { server: 'db', tool: 'drop_table', permission: 'act' });
    await system.api.act('RefreshMcpServer', { name: 'db' });
    await eventually(
      async () => ((await tool('db__drop_table')).permission === 'act' ? true : undefined),
      15_000,
      'the override projected',
    );
    expect((await system.call('agent', 'o2', 'db__drop_table', { table: 't' })).result.text).toBe('dropped t');
    await system.api.act('RefreshMcpServer', { name: 'db' });
    expect((await tool('db__drop_table')).permission).toBe('act');
    await system.api.act('SetToolPermission', { server: 'db', tool: 'drop_table', permission: null });
    await eventually(
      async () => ((await tool('db__drop_table')).permission === 'always_ask' ? true : undefined),
      15_000,
      'back to inherited',
    );
  });

  it('refuses bad overrides', async () => {
    expect(
      (await actionError(system.api.act('SetToolPermission', { server: 'db', tool: 'nope', permission: 'act' }))).code,
    ).toBe('not_found');
    expect(
      (await actionError(system.api.act('SetToolPermission', { server: 'nope', tool: 'add', permission: 'act' }))).code,
    ).toBe('not_found');
    expect(
      (await actionError(system.api.act('SetToolPermission', { server: 'db', tool: 'add', permission: 'sometimes' })))
        .code,
    ).toBe('invalid_input');
  });

  it('refuses an approval that expired (APPROVAL_TTL_MS), used or decided late', async () => {
    await eventually(
      async () => ((await tool('db__drop_table')).permission === 'always_ask' ? true : undefined),
      15_000,
      'always_ask',
    );
    const approved = await eventually(
      async () => stoppedCall(system, 'agent', 'e1', 'db__drop_table', { table: 'late' }).catch(() => undefined),
      15_000,
      'a stop',
    );
    const { approval } = await system.api.act<{ approval: ApprovalView }>('ApproveToolCall', { approvalId: approved });
    // Approved: usable for the TTL from the decision.
    expect(Date.parse(approval.expiresAt) - Date.parse(approval.decidedAt!)).toBe(TTL_MS);
    // Another run's call (the same call re-sent bare would use the approval just given).
    const undecided = await stoppedCall(system, 'agent', 'e2', 'db__drop_table', { table: 'late' });
    await new Promise((r) => setTimeout(r, TTL_MS + 200));
    const before = upstream.stats.calls;
    const err = await system.callError('agent', 'e1', 'db__drop_table', { table: 'late' }, { approvalId: approved });
    expect(err.code).toBe('approval_refused');
    expect(err.details.reason).toBe('expired');
    expect(upstream.stats.calls).toBe(before);
    const late = await actionError(system.api.act('ApproveToolCall', { approvalId: undecided }));
    expect(late.code).toBe('conflict');
    expect(late.details.reason).toBe('expired');
    expect(
      (await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals.some((a) => a.id === undecided),
    ).toBe(false);
  });
});
