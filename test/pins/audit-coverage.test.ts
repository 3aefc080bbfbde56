import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { ProxySystem } from '../support/proxy-system.js';
import { approvalSystemPerSuite, stoppedCall } from '../approvals/approval-tools.js';

interface AuditEvent {
  action: string;
  signer: string;
  role: string;
  target: { kind: string; name: string };
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/**
 * The audit log's other entries, each against the real system (registry, projector and proxy on
 * real NATS, Postgres and Redis, a real MCP server): an owner's approval decisions (never the
 * call's arguments), agent tokens issued and revoked (by id, never the token), lambda tools set
 * and deleted (by CID). pins.test.ts covers servers, agents, grants, permission levels, pins and
 * reviews; test/inputs the input answers; test/registry/audit-signers-vendors.test.ts signers,
 * vendor connections and authorizations.
 */
describe('the audit log records approvals, agent tokens and lambda tools, never a secret', () => {
  let system: ProxySystem;
  approvalSystemPerSuite((started) => ({ system } = started), { era: 'modern' });

  const audit = async (filter: Record<string, unknown>): Promise<AuditEvent[]> =>
    (await system.api.act<{ events: AuditEvent[] }>('ListAuditEvents', filter)).events;

  it("an owner's ApproveToolCall and DenyToolCall: who decided which call, never its arguments", async () => {
    const secretArg = 'table-with-a-secret-name-7f3a9c';
    const approved = await stoppedCall(system, 'agent', 'au-1', 'db__drop_table', { table: secretArg });
    const denied = await stoppedCall(system, 'agent', 'au-2', 'db__drop_table', { table: secretArg });
    await system.api.act('ApproveToolCall', { approvalId: approved });
    await system.api.act('DenyToolCall', { approvalId: denied });
    // A decision that changes nothing (already decided) records nothing.
    await system.api.act('DenyToolCall', { approvalId: approved }).catch(() => undefined);
    const entries = [...(await audit({ action: 'ApproveToolCall' })), ...(await audit({ action: 'DenyToolCall' }))];
    expect(entries).toEqual([
      expect.objectContaining({
        signer: system.api.principal,
        role: 'OWNER',
        target: { kind: 'approval', name: approved },
        after: {
          decision: 'approved',
          tool: 'db__drop_table',
          server: 'db',
          agent: system.agentId('agent'),
          run: 'au-1',
        },
      }),
      expect.objectContaining({
        target: { kind: 'approval', name: denied },
        after: expect.objectContaining({ decision: 'denied', run: 'au-2' }),
      }),
    ]);
    expect(JSON.stringify(await audit({ limit: 200 }))).not.toContain(secretArg);
  });

  it('CreateAgentToken and RevokeAgentToken: the token by id and its rights, never the token; a second revoke records nothing', async () => {
    const created = await system.api.act<{ token: string; id: string }>('CreateAgentToken', {
      agent: system.agentId('agent'),
      name: 'laptop',
      userMayApprove: true,
      expiresInDays: 30,
    });
    await system.api.act('RevokeAgentToken', { id: created.id });
    await system.api.act('RevokeAgentToken', { id: created.id });
    const [issued] = await audit({ action: 'CreateAgentToken' });
    expect(issued).toMatchObject({
      signer: system.api.principal,
      role: 'OWNER',
      target: { kind: 'token', name: created.id },
      after: { agent: 'agent', name: 'laptop', userMayApprove: true },
    });
    expect(Date.parse(issued!.after!.expiresAt as string)).toBeGreaterThan(Date.now());
    expect(await audit({ action: 'RevokeAgentToken' })).toEqual([
      expect.objectContaining({ target: { kind: 'token', name: created.id }, after: { revoked: true } }),
    ]);
    expect(await audit({ targetKind: 'token' })).toHaveLength(2);
    // Neither the answer's token nor its hash anywhere in the account's rows.
    const client = new pg.Client({ connectionString: system.db.url });
    await client.connect();
    const rows = await client
      .query<{ j: string }>('SELECT row_to_json(a)::text AS j FROM registry.audit_events a WHERE account_id = $1', [
        system.account,
      ])
      .finally(() => client.end());
    const text = rows.rows.map((r) => r.j).join('\n');
    expect(text).not.toContain(created.token);
    expect(text).not.toContain(created.token.slice(-24));
  });

  it('SetLambdaTool and DeleteLambdaTool: which agent, which lambda, its document by CID', async () => {
    const description = 'A lambda whose description stays out of the log.';
    const set = await system.api.act<{ name: string; cid: string }>('SetLambdaTool', {
      agent: system.agentId('agent'),
      name: 'my_lambda',
      document: { description, inputSchema: { type: 'object' } },
    });
    await system.api.act('DeleteLambdaTool', { agent: system.agentId('agent'), name: 'my_lambda' });
    expect(await audit({ action: 'SetLambdaTool' })).toEqual([
      expect.objectContaining({
        role: 'OWNER',
        target: { kind: 'tool', name: 'agent/my_lambda' },
        // Written before the projector answers (it commits once the projector holds the lambda):
        // the document's CID, not the agent's set version.
        after: { cid: set.cid },
      }),
    ]);
    expect(await audit({ action: 'DeleteLambdaTool' })).toEqual([
      expect.objectContaining({ target: { kind: 'tool', name: 'agent/my_lambda' } }),
    ]);
    // A refused lambda (over an mcp tool's name) records nothing.
    await system.api
      .act('SetLambdaTool', { agent: system.agentId('agent'), name: 'db__echo', document: { description: 'x' } })
      .catch(() => undefined);
    expect(await audit({ action: 'SetLambdaTool' })).toHaveLength(1);
    expect(JSON.stringify(await audit({ limit: 200 }))).not.toContain(description);
  });
});
