/**
 * Actions whose change and audit entry are both in Postgres, with Postgres lost at the entry
 * (against the running registry: the entry's insert waits behind a table lock the test holds, and
 * its connection is terminated, 57P01). Every error code means "the action was not run": the
 * change and its entry commit together, so an `unavailable` answer leaves nothing stored. Before,
 * the change was committed first and its entry written on its own: the answer said nothing was
 * written with the change stored and no entry for it.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createDb, type Db } from '@mcpx/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type ApprovalView } from '@mcpx/contracts';
import { approvalSystemPerSuite, stoppedCall } from '../approvals/approval-tools.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { ApiClient } from '../support/api-client.js';
import {
  atTheAuditEntry,
  described,
  expectNothingWritten,
  postgresLoss,
  type PostgresLoss,
} from '../support/postgres-lost.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { vendorTools } from '../console/vendor-tools.js';

describe('actions with Postgres lost at their audit entry: unavailable, and nothing was written', () => {
  let h: RegistryHarness;
  /** The test's locks: connections of their own (the harness's pool is the test's reads). */
  let locks: Db;
  let loss: PostgresLoss;
  let api: ApiClient;
  let agentId: string;

  /** The `github` built-in's endpoint (never probed here: the re-probe's first step is far off). */
  let vendor: TestMcpServer;

  beforeAll(async () => {
    vendor = await startTestMcpServer({ tools: vendorTools() });
    h = await RegistryHarness.start({
      projector: false,
      registry: { reprobe: { baseMs: 600_000 } },
      env: { BUILTIN_ENDPOINTS: `github=${vendor.url}` },
    });
    locks = createDb(h.db.url, { max: 2 });
    loss = postgresLoss(h.sql, locks);
    api = h.api();
    agentId = (
      await api.act<{ agent: { id: string } }>('CreateAgent', { name: 'helper', definition: { mcpServers: [] } })
    ).agent.id;
  });
  afterAll(async () => {
    await locks?.destroy();
    await h?.stop();
    await vendor?.close();
  });

  /** The entries the log holds for `action`. */
  async function entries(action: string): Promise<unknown[]> {
    const r = await sql<{ after: unknown }>`
      SELECT after FROM registry.audit_events
      WHERE account_id = ${api.principal} AND action = ${action} ORDER BY id`.execute(h.sql);
    return r.rows.map((x) => x.after);
  }

  it('DecideSignIn: the sign-in stays pending, with no entry, and is decided when asked again', async () => {
    // A pending sign-in as the authorization server stores it (only hashes; nothing here is used again).
    const id = `si_${randomBytes(16).toString('hex')}`;
    await h.sql
      .insertInto('registry.oauth_sign_ins')
      .values({
        id,
        account_id: api.principal,
        agent_id: agentId,
        client_id: 'https://client.example/metadata.json',
        client_name: 'Client',
        redirect_uri: 'https://client.example/callback',
        resource: 'https://endpoint.example/mcp',
        scope: null,
        state: null,
        code_challenge: 'c'.repeat(43),
        browser_hash: 'b'.repeat(64),
        status: 'pending',
        continue_hash: null,
        code_hash: null,
        code_expires_at: null,
        token_id: null,
        expires_at: new Date(Date.now() + 600_000),
        decided_at: null,
        decided_by: null,
        ended_at: null,
        end_reason: null,
        requester_hash: null,
      })
      .execute();
    const stored = async (): Promise<unknown> =>
      (
        await sql<{ status: string; continue_hash: string | null; decided_by: string | null }>`
          SELECT status, continue_hash, decided_by FROM registry.oauth_sign_ins WHERE id = ${id}`.execute(h.sql)
      ).rows;
    const got = await loss.withPostgresLostAt(
      () => api.act('DecideSignIn', { id, decision: 'approve' }),
      atTheAuditEntry,
    );
    expectNothingWritten(got);
    // "Nothing was written" is true: no decision, no continue nonce, no entry.
    expect(await stored()).toEqual([{ status: 'pending', continue_hash: null, decided_by: null }]);
    expect(await entries('DecideSignIn')).toEqual([]);
    // Asked again, it is decided and recorded once.
    const again = await api.act<{ decision: string; continueUrl: string }>('DecideSignIn', { id, decision: 'approve' });
    expect(again.decision).toBe('approve');
    expect(await stored()).toMatchObject([{ status: 'approved' }]);
    expect(await entries('DecideSignIn')).toEqual([
      { signIn: id, decision: 'approve', client: 'https://client.example/metadata.json' },
    ]);
  }, 30_000);

  it('RevokeAgentToken: the token stays active, with no entry, and is revoked when asked again', async () => {
    const { id } = await api.act<{ id: string }>('CreateAgentToken', { agent: 'helper', name: 'kept' });
    const revokedAt = async (): Promise<unknown> =>
      (
        await sql<{ revoked: Date | null }>`
          SELECT revoked_at AS revoked FROM registry.agent_tokens WHERE id = ${id}`.execute(h.sql)
      ).rows;
    const got = await loss.withPostgresLostAt(() => api.act('RevokeAgentToken', { id }), atTheAuditEntry);
    expectNothingWritten(got);
    // "Nothing was written" is true: the token is not revoked, and no entry says it was.
    expect(await revokedAt()).toEqual([{ revoked: null }]);
    expect(await entries('RevokeAgentToken')).toEqual([]);
    const again = await api.act<{ revoked: boolean }>('RevokeAgentToken', { id });
    expect(again.revoked).toBe(true);
    expect(await revokedAt()).toEqual([{ revoked: expect.any(Date) }]);
    expect(await entries('RevokeAgentToken')).toEqual([{ revoked: true }]);
  }, 30_000);

  it('SetVendorConnection, then SetToolPermission on its built-in: neither is stored, with no entry, and each is when asked again', async () => {
    const connections = async (): Promise<number> =>
      (
        await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM registry.vendor_connections WHERE account_id = ${api.principal}`.execute(h.sql)
      ).rows[0]!.n;
    const overrides = async (): Promise<unknown> =>
      (
        await sql<{ tool: string; permission: string }>`
          SELECT tool, permission FROM registry.builtin_tool_permissions
          WHERE account_id = ${api.principal}`.execute(h.sql)
      ).rows;
    const connect = (): Promise<unknown> =>
      api.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_lostAtTheEntry123' });
    const got = await loss.withPostgresLostAt(connect, atTheAuditEntry);
    expectNothingWritten(got);
    expect(JSON.stringify((got as WireError).details)).not.toContain('gho_lostAtTheEntry123');
    // "Nothing was written" is true: no connection, no built-in lit, no entry.
    expect(await connections()).toBe(0);
    expect((await api.act<{ servers: unknown[] }>('ListMcpServers')).servers).toEqual([]);
    expect(await entries('SetVendorConnection')).toEqual([]);
    const lit = (await connect()) as { servers: Array<{ name: string }> };
    expect(lit.servers.map((s) => s.name)).toEqual(['github']);
    expect(await connections()).toBe(1);
    expect(await entries('SetVendorConnection')).toEqual([
      { vendor: 'github', servers: ['github'], refreshToken: false },
    ]);

    const set = (): Promise<unknown> =>
      api.act('SetToolPermission', { server: 'github', tool: 'get_issue', permission: 'always_ask' });
    expectNothingWritten(await loss.withPostgresLostAt(set, atTheAuditEntry));
    expect(await overrides()).toEqual([]);
    expect(await entries('SetToolPermission')).toEqual([]);
    expect(await set()).toMatchObject({ server: 'github', tool: 'get_issue', permission: 'always_ask' });
    expect(await overrides()).toEqual([{ tool: 'get_issue', permission: 'always_ask' }]);
    expect(await entries('SetToolPermission')).toEqual([{ permission: 'always_ask', builtin: true }]);
  }, 30_000);

  it("SetVendorConnection as an account's first write: the account is not created either", async () => {
    // A key that has written nothing: its first write creates its account.
    const first = new ApiClient(api.apiUrl);
    const accounts = async (): Promise<number> =>
      (
        await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM registry.accounts WHERE id = ${first.principal}`.execute(h.sql)
      ).rows[0]!.n;
    const connect = (): Promise<unknown> =>
      first.act('SetVendorConnection', { vendor: 'github', accessToken: 'gho_firstWriteLost123' });
    expectNothingWritten(await loss.withPostgresLostAt(connect, atTheAuditEntry));
    // "Nothing was written" is true: not even the account's row (it was created before the
    // connection's transaction, and stayed).
    expect(await accounts()).toBe(0);
    await connect();
    expect(await accounts()).toBe(1);
  }, 30_000);
});

describe('ApproveToolCall with Postgres lost at its audit entry: unavailable, and nothing was decided', () => {
  let system: ProxySystem;
  /** The test's reads, and connections of its own for the locks. */
  let reads: Db;
  let locks: Db;
  let loss: PostgresLoss;

  approvalSystemPerSuite((started) => ({ system } = started));
  beforeAll(() => {
    reads = createDb(system.db.url, { max: 2 });
    locks = createDb(system.db.url, { max: 2 });
    loss = postgresLoss(reads, locks);
  });
  afterAll(async () => {
    await locks?.destroy();
    await reads?.destroy();
  });

  it('the approval stays pending, with no entry, and is approved when asked again', async () => {
    const api = system.api;
    const id = await stoppedCall(system, 'agent', 'lost-1', 'db__drop_table', { table: 'kept' });
    const status = async (): Promise<string | undefined> =>
      (await api.act<{ approvals: ApprovalView[] }>('ListApprovals')).approvals.find((a) => a.id === id)?.status;
    const entries = async (): Promise<unknown[]> =>
      (
        await sql<{ after: unknown }>`
          SELECT after FROM registry.audit_events
          WHERE action = 'ApproveToolCall' AND target = ${id} ORDER BY id`.execute(reads)
      ).rows.map((r) => r.after);
    const got = await loss.withPostgresLostAt(() => api.act('ApproveToolCall', { approvalId: id }), atTheAuditEntry);
    expect(got, described(got)).toBeInstanceOf(WireError);
    expect((got as WireError).code, described(got)).toBe('unavailable');
    expect((got as Error).message).toContain('nothing was written');
    // "Nothing was written" is true: the call is still waiting for a human, and no entry says otherwise.
    expect(await status()).toBe('pending');
    expect(await entries()).toEqual([]);
    const again = await api.act<{ approval: ApprovalView }>('ApproveToolCall', { approvalId: id });
    expect(again.approval.status).toBe('approved');
    expect(await entries()).toEqual([
      { decision: 'approved', tool: 'db__drop_table', server: 'db', agent: expect.any(String), run: 'lost-1' },
    ]);
  }, 60_000);
});
