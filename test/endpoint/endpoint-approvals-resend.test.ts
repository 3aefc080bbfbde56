import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ApprovalView } from '@mcpx/contracts';
import { stoppedCall } from '../approvals/approval-tools.js';
import { type TestMcpServer } from '../servers/index.js';
import type { startApprovalEndpoints } from './approval-endpoints.js';
import { type Path } from './approval-endpoints.js';
import { startApprovalEndpointsOnDb } from '../support/fixtures/approval-endpoints.js';

type ErrorMeta = { code: string; message: string; details: Record<string, unknown> };
type Result = { content?: unknown; isError?: boolean; _meta?: Record<string, unknown> };
const errorOf = (result: Result): ErrorMeta =>
  (result._meta?.['io.mcpx/error'] as ErrorMeta | undefined) ?? { code: 'none', message: '', details: {} };
const textOf = (result: Result): string => (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
type Call = (args: Record<string, unknown>) => Promise<Result>;
type Era = 'v2 (2026-07-28)' | 'v1 (2025-11-25)';

/**
 * Approvals any client can finish: an always_ask call stops with a result naming the approval and
 * the console link where the owner decides it; once the owner approves (the console's signed
 * action), the same call re-sent as it was (no `_meta`) runs exactly once. Attacks: another token
 * re-sending the same call, the same token with other arguments, a re-send after it ran, a denied
 * approval. Real SDK v2 (2026-07-28) and v1 (2025-11-25) clients through both serving paths, and
 * the NATS runtime path.
 */
describe('approvals any client can finish: the same call re-sent runs once', () => {
  let stack: Awaited<ReturnType<typeof startApprovalEndpoints>>;
  let upstream: TestMcpServer;
  const closers: Array<() => Promise<void>> = [];
  const tokens = { a: '', b: '' };

  const url = (path: Path): string => `${stack.endpoints[path].url}/v1/agents/ops/mcp`;

  /** A connected client of `era` on `path` with `token`, as a function that calls drop_table with nothing but its arguments. */
  const clientOf = async (era: Era, path: Path, token: string): Promise<Call> => {
    const headers = { authorization: `Bearer ${token}` };
    if (era === 'v2 (2026-07-28)') {
      const client = new ClientV2({ name: 'resend', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new TransportV2(new URL(url(path)), { requestInit: { headers } }));
      closers.push(() => client.close());
      return (args) => client.callTool({ name: 'db__drop_table', arguments: args });
    }
    const client = new ClientV1({ name: 'resend', version: '1.0.0' });
    await client.connect(new TransportV1(new URL(url(path)), { requestInit: { headers } }));
    closers.push(() => client.close());
    return (args) => client.callTool({ name: 'db__drop_table', arguments: args });
  };

  const pendingOf = async (table: string): Promise<ApprovalView[]> =>
    (await stack.system.api.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals.filter(
      (a) => (a.arguments as { table?: string } | undefined)?.table === table,
    );

  beforeAll(async () => {
    ({ stack, upstream } = await startApprovalEndpointsOnDb());
    tokens.a = (await stack.system.api.act<{ token: string }>('CreateAgentToken', { agent: 'ops', name: 'a' })).token;
    tokens.b = (await stack.system.api.act<{ token: string }>('CreateAgentToken', { agent: 'ops', name: 'b' })).token;
  }, 120_000);

  afterAll(async () => {
    for (const c of closers) await c().catch(() => undefined);
    await stack?.stop();
    await upstream?.close();
  });

  const cases: Array<[Era, Path]> = [
    ['v2 (2026-07-28)', 'lean'],
    ['v2 (2026-07-28)', 'sdk'],
    ['v1 (2025-11-25)', 'lean'],
    ['v1 (2025-11-25)', 'sdk'],
  ];

  it.each(cases)(
    '%s client, %s path: approved, the bare re-send runs once; another token, other arguments, a second re-send and a denial do not run',
    async (era, path) => {
      const table = `t-${era.slice(0, 2)}-${path}`;
      const callA = await clientOf(era, path, tokens.a);
      const callB = await clientOf(era, path, tokens.b);
      const before = upstream.stats.calls;

      // Stopped: the result names the approval and the console link where the owner decides it.
      const stopped = await callA({ table });
      expect(stopped.isError).toBe(true);
      expect(errorOf(stopped).code).toBe('approval_required');
      const id = errorOf(stopped).details.approvalId as string;
      const link = `${stack.consoleUrl}/?approval=${id}#approvals`;
      expect(errorOf(stopped).details.decideAt).toBe(link);
      expect(textOf(stopped)).toContain(id);
      expect(textOf(stopped)).toContain(link);
      // The link opens the console.
      const page = await fetch(link);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('id="approvals"');

      // Re-sent before the owner decided: the same approval, not a new one.
      const again = await callA({ table });
      expect(errorOf(again)).toMatchObject({ code: 'approval_required', details: { approvalId: id } });
      expect((await pendingOf(table)).map((a) => a.id)).toEqual([id]);

      // Another token's same call is its own call: its own approval.
      const other = errorOf(await callB({ table }));
      expect(other.code).toBe('approval_required');
      const otherId = other.details.approvalId as string;
      expect(otherId).not.toBe(id);

      await stack.system.api.act('ApproveToolCall', { approvalId: id });

      // Attack: another token re-sending the same call does not consume A's approval.
      expect(errorOf(await callB({ table }))).toMatchObject({
        code: 'approval_required',
        details: { approvalId: otherId },
      });
      // Attack: other arguments do not consume it.
      const otherArgs = errorOf(await callA({ table: `${table}-other` }));
      expect(otherArgs.code).toBe('approval_required');
      expect(otherArgs.details.approvalId).not.toBe(id);
      expect(upstream.stats.calls).toBe(before);

      // The same call, re-sent as it was: runs once.
      const ran = await callA({ table });
      expect(ran.isError).toBeFalsy();
      expect(textOf(ran)).toBe(`dropped ${table}`);
      expect(upstream.stats.calls).toBe(before + 1);

      // A second re-send after it ran asks again (a new approval).
      const second = errorOf(await callA({ table }));
      expect(second.code).toBe('approval_required');
      const secondId = second.details.approvalId as string;
      expect(secondId).not.toBe(id);
      expect(upstream.stats.calls).toBe(before + 1);

      // Denied: the re-send is refused, and keeps being refused (no new approval is asked).
      await stack.system.api.act('DenyToolCall', { approvalId: secondId });
      for (let i = 0; i < 2; i++)
        expect(errorOf(await callA({ table }))).toMatchObject({
          code: 'approval_refused',
          details: { approvalId: secondId, reason: 'denied' },
        });
      expect((await pendingOf(table)).map((a) => a.id)).toEqual([otherId]);
      expect(upstream.stats.calls).toBe(before + 1);

      // The explicit `_meta` id still works, once, for its own call.
      await stack.system.api.act('ApproveToolCall', { approvalId: otherId });
      expect(textOf(await callB({ table }))).toBe(`dropped ${table}`);
      expect(upstream.stats.calls).toBe(before + 2);
    },
  );

  it('the NATS runtime path: a call re-sent without the approval id runs once; another run, other arguments, a second re-send do not', async () => {
    const { system } = stack;
    const before = upstream.stats.calls;
    const id = await stoppedCall(system, 'ops', 'run-1', 'db__drop_table', { table: 'nats' });
    expect(await stoppedCall(system, 'ops', 'run-1', 'db__drop_table', { table: 'nats' })).toBe(id);
    const otherRun = await stoppedCall(system, 'ops', 'run-2', 'db__drop_table', { table: 'nats' });
    expect(otherRun).not.toBe(id);
    await system.api.act('ApproveToolCall', { approvalId: id });
    expect(await stoppedCall(system, 'ops', 'run-2', 'db__drop_table', { table: 'nats' })).toBe(otherRun);
    expect(await stoppedCall(system, 'ops', 'run-1', 'db__drop_table', { table: 'nats-other' })).not.toBe(id);
    expect(upstream.stats.calls).toBe(before);
    const out = await system.call('ops', 'run-1', 'db__drop_table', { table: 'nats' });
    expect(out.result.text).toBe('dropped nats');
    expect(upstream.stats.calls).toBe(before + 1);
    // Used: the id is refused as used, and the bare re-send asks again.
    expect(
      (await system.callError('ops', 'run-1', 'db__drop_table', { table: 'nats' }, { approvalId: id })).details,
    ).toMatchObject({ reason: 'used' });
    expect(await stoppedCall(system, 'ops', 'run-1', 'db__drop_table', { table: 'nats' })).not.toBe(id);
    expect(upstream.stats.calls).toBe(before + 1);
  });

  it('racing re-sends of one approved call run it once', async () => {
    const { system } = stack;
    const id = await stoppedCall(system, 'ops', 'race', 'db__drop_table', { table: 'race' });
    await system.api.act('ApproveToolCall', { approvalId: id });
    const before = upstream.stats.calls;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () => system.call('ops', 'race', 'db__drop_table', { table: 'race' })),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect(upstream.stats.calls).toBe(before + 1);
  });
});
