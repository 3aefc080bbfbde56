import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { request } from '@mcpx/bus';
import { tokenDecisionAuditReplyValue, type TokenDecisionAuditReply } from '@mcpx/contracts';
import { loadEndpointConfig, startEndpoint } from '@mcpx/endpoint';
import { freePort, type TestMcpServer } from '../servers/index.js';
import { errorOf, startEndpointApprovalSystem, type EndpointSystem } from './endpoint-harness.js';
import { modernCall, type RpcAnswer } from './raw-mcp.js';

const textOf = (result: { content?: unknown }): string =>
  (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
const APPROVAL_KEY = 'mcpx_approval';

/**
 * Approval by the MCP client's user: a token the owner issued with
 * `userMayApprove` has its always_ask calls asked of the client's user (a form elicitation through
 * `input_required`), answered by a real SDK v2 client; accept runs the call once, decline refuses
 * it, the owner may decide first. Attacks with the raw wire: a forged state, a replayed one, one
 * bound to other arguments, one from another token, and a token without the right.
 */
describe('the agent MCP endpoint: the client user approves (modern clients)', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  const clients: Client[] = [];
  let approver: { token: string; id: string };
  let other: { token: string; id: string };
  let plain: { token: string; id: string };

  /** An SDK v2 client whose "user" answers every elicitation with `action`, recording the questions. */
  const connect = async (token: string, action: 'accept' | 'decline' | 'cancel', asked: string[]): Promise<Client> => {
    const client = new Client(
      { name: 'user-approval', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', (req) => {
      asked.push((req.params as { message: string }).message);
      return Promise.resolve(action === 'accept' ? { action, content: {} } : { action });
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(sys.urlOf('ops')), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  };

  const raw = (token: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<RpcAnswer> =>
    modernCall(sys.urlOf('ops'), token, 'db__drop_table', args, { elicitation: { form: {} } }, extra);

  beforeAll(async () => {
    ({ sys, upstream } = await startEndpointApprovalSystem());
    [approver, other, plain] = await Promise.all([
      sys.token('ops', { name: 'approver', userMayApprove: true }),
      sys.token('ops', { name: 'other', userMayApprove: true }),
      sys.token('ops', { name: 'plain' }),
    ]);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await sys?.stop();
    await upstream?.close();
  });

  it('lists the right with the token, and refuses a right that is not a boolean, naming the field', async () => {
    const { tokens } = await sys.system.api.act<{ tokens: Array<{ id: string; userMayApprove: boolean }> }>(
      'ListAgentTokens',
      { agent: 'ops' },
    );
    expect(Object.fromEntries(tokens.map((t) => [t.id, t.userMayApprove]))).toEqual({
      [approver.id]: true,
      [other.id]: true,
      [plain.id]: false,
    });
    await expect(sys.token('ops', { userMayApprove: 'yes' })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'userMayApprove' },
    });
  });

  it("asks the client's user with the arguments as the owner sees them; accepted, the call runs once, decided by the token", async () => {
    const asked: string[] = [];
    const client = await connect(approver.token, 'accept', asked);
    const before = upstream.stats.calls;
    const ran = await client.callTool({ name: 'db__drop_table', arguments: { table: 'users' } });
    expect(ran.isError, textOf(ran)).toBeFalsy();
    expect(textOf(ran)).toBe('dropped users');
    expect(upstream.stats.calls).toBe(before + 1);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBe('Approve db__drop_table with these arguments?\n{\n  "table": "users"\n}');
    // Nothing is left waiting for the owner; the audit log says who decided: the token, by id.
    const { approvals } = await sys.system.api.act<{ approvals: unknown[] }>('ListApprovals', {});
    expect(approvals).toEqual([]);
    const { events } = await sys.system.api.act<{
      events: Array<{ action: string; signer: string; role: string; after: Record<string, unknown> }>;
    }>('ListAuditEvents', { action: 'ApproveToolCall' });
    expect(events.map((e) => [e.signer, e.role, e.after.tool, e.after.run])).toContainEqual([
      `agent-token:${approver.id}`,
      'agent_token',
      'db__drop_table',
      `ep-${approver.id}`,
    ]);
    expect(JSON.stringify(events)).not.toContain(approver.token);
  });

  it('declined, the call does not run and the approval is denied', async () => {
    const asked: string[] = [];
    const client = await connect(approver.token, 'decline', asked);
    const before = upstream.stats.calls;
    const refused = await client.callTool({ name: 'db__drop_table', arguments: { table: 'orders' } });
    expect(refused.isError).toBe(true);
    expect(errorOf(refused)).toMatchObject({
      code: 'approval_refused',
      details: { reason: 'denied', decidedBy: 'client_user' },
    });
    expect(asked).toHaveLength(1);
    expect(upstream.stats.calls).toBe(before);
    // The owner can no longer approve it: it was decided.
    const approvalId = errorOf(refused).details.approvalId as string;
    await expect(sys.system.api.act('ApproveToolCall', { approvalId })).rejects.toMatchObject({
      code: 'conflict',
      details: { reason: 'decided' },
    });
  });

  it('a token without the right, or a client that cannot answer forms, waits for the owner as before', async () => {
    const asked: string[] = [];
    const client = await connect(plain.token, 'accept', asked);
    const stopped = await client.callTool({ name: 'db__drop_table', arguments: { table: 'plain' } });
    expect(errorOf(stopped).code).toBe('approval_required');
    const noForms = await modernCall(sys.urlOf('ops'), approver.token, 'db__drop_table', { table: 'noforms' }, {});
    expect(errorOf(noForms.result as never).code).toBe('approval_required');
    const urlsOnly = await modernCall(
      sys.urlOf('ops'),
      approver.token,
      'db__drop_table',
      { table: 'urlsonly' },
      { elicitation: { url: {} } },
    );
    expect(errorOf(urlsOnly.result as never).code).toBe('approval_required');
    expect(asked).toEqual([]);
  });

  it('the owner decides first: a denial in the console wins over the user accepting', async () => {
    const before = upstream.stats.calls;
    const first = await raw(approver.token, { table: 'race' });
    expect(first.result?.resultType).toBe('input_required');
    const state = first.result?.requestState as string;
    const { approvals } = await sys.system.api.act<{
      approvals: Array<{ id: string; tool: string; arguments: unknown }>;
    }>('ListApprovals', {});
    const pending = approvals.find((a) => (a.arguments as { table?: string }).table === 'race');
    expect(pending?.tool).toBe('db__drop_table');
    await sys.system.api.act('DenyToolCall', { approvalId: pending!.id });
    const late = await raw(
      approver.token,
      { table: 'race' },
      { requestState: state, inputResponses: { [APPROVAL_KEY]: { action: 'accept', content: {} } } },
    );
    expect(errorOf(late.result as never)).toMatchObject({ code: 'approval_refused', details: { reason: 'denied' } });
    expect(upstream.stats.calls).toBe(before);
  });

  it('attack: an approval answered before it is asked (inputResponses, no requestState) decides nothing; the question is asked', async () => {
    const before = upstream.stats.calls;
    const preanswered = await raw(
      approver.token,
      { table: 'preanswered' },
      { inputResponses: { [APPROVAL_KEY]: { action: 'accept', content: {} } } },
    );
    expect(preanswered.result?.resultType, JSON.stringify(preanswered.message)).toBe('input_required');
    expect(Object.keys(preanswered.result?.inputRequests as object)).toEqual([APPROVAL_KEY]);
    expect(upstream.stats.calls).toBe(before);
  });

  it('refuses a forged, a replayed, a rebound and a borrowed requestState; nothing runs', async () => {
    const accept = { inputResponses: { [APPROVAL_KEY]: { action: 'accept', content: {} } } };
    const first = await raw(approver.token, { table: 'target' });
    const state = first.result?.requestState as string;
    expect(state.startsWith('mcpx-apv1.')).toBe(true);
    // The state reveals nothing readable: no approval id, tool or argument in it.
    expect(Buffer.from(state.split('.').at(-1)!, 'base64url').toString('latin1')).not.toMatch(/apr_|drop_table|target/);
    const before = upstream.stats.calls;

    const forged = await raw(
      approver.token,
      { table: 'target' },
      { requestState: `mcpx-apv1.k1.${Buffer.alloc(80, 7).toString('base64url')}`, ...accept },
    );
    expect(errorOf(forged.result as never)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'requestState' },
    });
    // One character of the sealed body changed.
    const flipped = state.slice(0, -3) + (state.at(-3) === 'A' ? 'B' : 'A') + state.slice(-2);
    const tampered = await raw(approver.token, { table: 'target' }, { requestState: flipped, ...accept });
    expect(errorOf(tampered.result as never)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'requestState' },
    });
    const rebound = await raw(approver.token, { table: 'everything' }, { requestState: state, ...accept });
    expect(errorOf(rebound.result as never)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'requestState' },
    });
    expect(textOf(rebound.result as never)).toContain('other arguments');
    // Another token of the same agent, even one with the right, cannot use it.
    const borrowed = await raw(other.token, { table: 'target' }, { requestState: state, ...accept });
    expect(errorOf(borrowed.result as never)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'requestState' },
    });
    expect(upstream.stats.calls).toBe(before);

    // The real answer runs it once; the same answer again runs nothing.
    const ran = await raw(approver.token, { table: 'target' }, { requestState: state, ...accept });
    expect(textOf(ran.result as never)).toBe('dropped target');
    const replay = await raw(approver.token, { table: 'target' }, { requestState: state, ...accept });
    expect(errorOf(replay.result as never)).toMatchObject({ code: 'approval_refused', details: { reason: 'used' } });
    expect(upstream.stats.calls).toBe(before + 1);
  });

  it('a state opens on any instance (the key ring); one that cannot reach Redis says unavailable and decides nothing', async () => {
    const accept = { inputResponses: { [APPROVAL_KEY]: { action: 'accept', content: {} } } };
    const first = await raw(approver.token, { table: 'elsewhere' });
    const state = first.result?.requestState as string;
    const before = upstream.stats.calls;
    const cutOff = await startEndpoint(
      loadEndpointConfig({
        ...sys.system.env,
        HTTP_PORT: '0',
        INSTANCE_ID: 'endpoint-no-redis',
        REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      }),
      {
        telemetry: sys.system.telemetry,
        logSink: () => {},
      },
    );
    const other = await startEndpoint(
      loadEndpointConfig({ ...sys.system.env, HTTP_PORT: '0', INSTANCE_ID: 'endpoint-other' }),
      { telemetry: sys.system.telemetry, logSink: () => {} },
    );
    try {
      const url = (base: string): string => `${base}/v1/agents/ops/mcp`;
      const down = await modernCall(
        url(cutOff.url),
        approver.token,
        'db__drop_table',
        { table: 'elsewhere' },
        { elicitation: { form: {} } },
        { requestState: state, ...accept },
      );
      expect(errorOf(down.result as never)).toMatchObject({ code: 'unavailable', details: { dependency: 'redis' } });
      const { approvals } = await sys.system.api.act<{ approvals: Array<{ arguments: unknown }> }>('ListApprovals', {});
      expect(approvals.some((a) => (a.arguments as { table?: string }).table === 'elsewhere')).toBe(true);
      const ran = await modernCall(
        url(other.url),
        approver.token,
        'db__drop_table',
        { table: 'elsewhere' },
        { elicitation: { form: {} } },
        { requestState: state, ...accept },
      );
      expect(textOf(ran.result as never)).toBe('dropped elsewhere');
      expect(upstream.stats.calls).toBe(before + 1);
    } finally {
      await Promise.all([cutOff.stop(), other.stop()]);
    }
  });

  it('a state presented by a token without the right does not open for it; the approval keeps waiting for the owner', async () => {
    const first = await raw(approver.token, { table: 'plainuse' });
    const state = first.result?.requestState as string;
    const answer = await raw(
      plain.token,
      { table: 'plainuse' },
      { requestState: state, inputResponses: { [APPROVAL_KEY]: { action: 'accept', content: {} } } },
    );
    // The state is sealed to the approver's token: for another one it does not open.
    expect(errorOf(answer.result as never)).toMatchObject({
      code: 'invalid_input',
      details: { field: 'requestState' },
    });
    const { approvals } = await sys.system.api.act<{ approvals: Array<{ arguments: unknown }> }>('ListApprovals', {});
    expect(approvals.some((a) => (a.arguments as { table?: string }).table === 'plainuse')).toBe(true);
  });

  it("the registry writes a token holder's decision into the audit log, once: the endpoint's request again answers already; an owner's decision, a pending or unknown approval, a malformed request write nothing", async () => {
    type Audit = {
      action: string;
      signer: string;
      role: string;
      target: { kind: string; name: string };
      after: Record<string, unknown>;
    };
    const entriesOf = async (approvalId: string): Promise<Audit[]> =>
      (await sys.system.api.act<{ events: Audit[] }>('ListAuditEvents', {})).events.filter(
        (e) => e.target.name === approvalId,
      );
    const ask = (payload: unknown): Promise<TokenDecisionAuditReply> =>
      request(
        sys.system.nc,
        sys.system.subjects.registryTokenDecisionAudit,
        payload,
        tokenDecisionAuditReplyValue,
        5_000,
      );
    const account = sys.system.api.principal;

    // A decision through the endpoint: written once, by the registry, worded from the approval store.
    const client = await connect(approver.token, 'decline', []);
    const declined = await client.callTool({ name: 'db__drop_table', arguments: { table: 'audited' } });
    const approvalId = errorOf(declined).details.approvalId as string;
    expect(await entriesOf(approvalId)).toEqual([
      expect.objectContaining({
        action: 'DenyToolCall',
        signer: `agent-token:${approver.id}`,
        role: 'agent_token',
        after: expect.objectContaining({ decision: 'denied', tool: 'db__drop_table', by: 'token_holder' }),
      }),
    ]);
    // A retry of the endpoint's request (its first answer lost): nothing more is written.
    await expect(ask({ account, approvalId })).resolves.toEqual({ audit: 'already' });
    await expect(Promise.all([ask({ account, approvalId }), ask({ account, approvalId })])).resolves.toEqual([
      { audit: 'already' },
      { audit: 'already' },
    ]);
    expect(await entriesOf(approvalId)).toHaveLength(1);

    // A pending approval, then the owner's decision: not the endpoint's to audit (the action did).
    const waiting = await (
      await connect(plain.token, 'accept', [])
    ).callTool({ name: 'db__drop_table', arguments: { table: 'owner' } });
    const ownerId = errorOf(waiting).details.approvalId as string;
    await expect(ask({ account, approvalId: ownerId })).rejects.toMatchObject({
      code: 'conflict',
      details: { field: 'approvalId' },
    });
    await sys.system.api.act('ApproveToolCall', { approvalId: ownerId });
    await expect(ask({ account, approvalId: ownerId })).rejects.toMatchObject({
      code: 'conflict',
      details: { field: 'approvalId' },
    });
    expect((await entriesOf(ownerId)).map((e) => [e.action, e.role])).toEqual([['ApproveToolCall', 'OWNER']]);
    // Unknown, another account's, malformed.
    await expect(ask({ account, approvalId: 'apr_unknown' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask({ account: 'acct_someone_else', approvalId })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask({ account, approvalId: 7 })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'approvalId' },
    });
    expect(await entriesOf('apr_unknown')).toEqual([]);
  });

  it("a registry that does not answer: the user's decision stands, its missing entry is logged naming the approval; the entry is written once when asked again", async () => {
    const accept = { inputResponses: { [APPROVAL_KEY]: { action: 'accept', content: {} } } };
    const first = await raw(approver.token, { table: 'unaudited' });
    const state = first.result?.requestState as string;
    const { approvals } = await sys.system.api.act<{ approvals: Array<{ id: string; arguments: unknown }> }>(
      'ListApprovals',
      {},
    );
    const approvalId = approvals.find((a) => (a.arguments as { table?: string }).table === 'unaudited')!.id;
    // An instance whose bus reaches no registry (another namespace of the same NATS): the answer is decided there.
    const lines: string[] = [];
    const alone = await startEndpoint(
      loadEndpointConfig({ ...sys.system.env, NATS_PREFIX: 'nobody.', HTTP_PORT: '0', INSTANCE_ID: 'endpoint-alone' }),
      {
        telemetry: sys.system.telemetry,
        logSink: (line) => void lines.push(line),
      },
    );
    try {
      await modernCall(
        `${alone.url}/v1/agents/ops/mcp`,
        approver.token,
        'db__drop_table',
        { table: 'unaudited' },
        { elicitation: { form: {} } },
        { requestState: state, ...accept },
      );
    } finally {
      await alone.stop();
    }
    // Decided (the owner can no longer decide it), not audited, and said so.
    await expect(sys.system.api.act('DenyToolCall', { approvalId })).rejects.toMatchObject({
      code: 'conflict',
      details: { reason: 'decided' },
    });
    const entries = async (): Promise<number> =>
      (await sys.system.api.act<{ events: Array<{ target: { name: string } }> }>('ListAuditEvents', {})).events.filter(
        (e) => e.target.name === approvalId,
      ).length;
    expect(await entries()).toBe(0);
    const missing = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'audit entry of a token holder decision not written');
    expect(missing).toEqual([expect.objectContaining({ level: 'error', approval: approvalId, attempts: 3 })]);
    // Asked again (twice at once): one entry.
    const ask = (): Promise<TokenDecisionAuditReply> =>
      request(
        sys.system.nc,
        sys.system.subjects.registryTokenDecisionAudit,
        { account: sys.system.api.principal, approvalId },
        tokenDecisionAuditReplyValue,
        5_000,
      );
    const replies = await Promise.all([ask(), ask()]);
    expect(replies.map((r) => r.audit).sort()).toEqual(['already', 'recorded']);
    expect(await entries()).toBe(1);
  });
});
