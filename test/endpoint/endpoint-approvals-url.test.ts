import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { type TestMcpServer } from '../servers/index.js';
import type { startApprovalEndpoints } from './approval-endpoints.js';
import { type Path } from './approval-endpoints.js';
import { modernCall } from './raw-mcp.js';
import { startApprovalEndpointsOnDb } from '../support/fixtures/approval-endpoints.js';
import { withBearer } from '../support/fixtures/bearer.js';

type ErrorMeta = { code: string; message: string; details: Record<string, unknown> };
type Result = { content?: unknown; isError?: boolean; _meta?: Record<string, unknown> };
const errorOf = (result: Result): ErrorMeta =>
  (result._meta?.['io.mcpx/error'] as ErrorMeta | undefined) ?? { code: 'none', message: '', details: {} };
const textOf = (result: Result): string => (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
type Question = { mode?: string; url?: string; elicitationId?: string; message: string };
/** The approval a URL question's console link names. */
const approvalOf = (q: Question): string => new URL(q.url ?? 'http://invalid').searchParams.get('approval') ?? '';

/**
 * The owner's decision as a URL question: a 2026-07-28 client that declares URL elicitation gets
 * an always_ask call's approval as an `input_required` URL question (the console link); its user
 * opens it, the owner approves there, the client answers and re-sends, and the call runs once. A
 * client that declares forms alone gets the refusal naming the link; a `--user-may-approve`
 * token's client that answers forms keeps its form question. Real SDK v2 clients on both serving
 * paths; attacks on the raw wire: a URL state presented by another token, an answer while the
 * approval still waits.
 */
describe('approvals any client can finish: a URL question to a client that opens one', () => {
  let stack: Awaited<ReturnType<typeof startApprovalEndpoints>>;
  let upstream: TestMcpServer;
  const clients: Client[] = [];
  const tokens = { plain: '', other: '', mayApprove: '' };

  const url = (path: Path): string => `${stack.endpoints[path].url}/v1/agents/ops/mcp`;

  /** An SDK v2 client declaring `elicitation`, whose user does `onQuestion` and answers `action`. */
  const connect = async (
    path: Path,
    token: string,
    elicitation: { form?: Record<string, never>; url?: Record<string, never> },
    onQuestion: (q: Question) => Promise<'accept' | 'decline' | 'cancel'>,
  ): Promise<Client> => {
    const client = new Client(
      { name: 'url-approvals', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation } },
    );
    client.setRequestHandler('elicitation/create', async (req) => {
      const action = await onQuestion(req.params);
      return action === 'accept'
        ? { action, ...((req.params as Question).mode === 'url' ? {} : { content: {} }) }
        : { action };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url(path)), withBearer(token)));
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    ({ stack, upstream } = await startApprovalEndpointsOnDb());
    const token = async (fields: Record<string, unknown>): Promise<string> =>
      (await stack.system.api.act<{ token: string }>('CreateAgentToken', { agent: 'ops', ...fields })).token;
    [tokens.plain, tokens.other, tokens.mayApprove] = await Promise.all([
      token({ name: 'plain' }),
      token({ name: 'other' }),
      token({ name: 'may-approve', userMayApprove: true }),
    ]);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await stack?.stop();
    await upstream?.close();
  });

  it.each(['lean', 'sdk'] as const)(
    '%s path: asked the console link; the owner approves there, the client answers, the call runs once',
    async (path) => {
      const table = `url-${path}`;
      const asked: Question[] = [];
      const client = await connect(path, tokens.plain, { url: {} }, async (q) => {
        asked.push(q);
        // The user opens the link; the owner decides there (the console's signed action).
        await stack.system.api.act('ApproveToolCall', { approvalId: approvalOf(q) });
        return 'accept';
      });
      const before = upstream.stats.calls;
      const ran = (await client.callTool({ name: 'db__drop_table', arguments: { table } })) as Result;
      expect(textOf(ran)).toBe(`dropped ${table}`);
      expect(upstream.stats.calls).toBe(before + 1);
      expect(asked).toHaveLength(1);
      const q = asked[0]!;
      expect(q.mode).toBe('url');
      // 2026-07-28 URL questions carry no elicitationId (the SDK drops it): the link names the approval.
      const id = approvalOf(q);
      expect(id).toMatch(/^apr_/);
      expect(q.url).toBe(`${stack.consoleUrl}/?approval=${id}#approvals`);
      expect(q.message).toContain(id);
    },
  );

  it('a 2025 client (SDK v1) that declared URL elicitation gets a URL-mode elicitation/create with its elicitationId: the approval', async () => {
    const asked: Question[] = [];
    const client = new V1Client({ name: 'url-v1', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const q = req.params as Question;
      asked.push(q);
      await stack.system.api.act('ApproveToolCall', { approvalId: approvalOf(q) });
      return { action: 'accept' as const };
    });
    await client.connect(new V1Transport(new URL(url('lean')), withBearer(tokens.plain)));
    const before = upstream.stats.calls;
    try {
      const ran = (await client.callTool({ name: 'db__drop_table', arguments: { table: 'url-v1' } })) as Result;
      expect(textOf(ran), JSON.stringify(ran)).toBe('dropped url-v1');
    } finally {
      await client.close();
    }
    expect(upstream.stats.calls).toBe(before + 1);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      mode: 'url',
      url: `${stack.consoleUrl}/?approval=${approvalOf(asked[0]!)}#approvals`,
      elicitationId: approvalOf(asked[0]!),
    });
  });

  it.each(['lean', 'sdk'] as const)(
    '%s path: the user declines to open it: nothing runs, the refusal names the approval and the link',
    async (path) => {
      const client = await connect(path, tokens.plain, { url: {} }, () => Promise.resolve('decline'));
      const before = upstream.stats.calls;
      const out = (await client.callTool({
        name: 'db__drop_table',
        arguments: { table: `declined-${path}` },
      })) as Result;
      expect(out.isError).toBe(true);
      expect(errorOf(out).code).toBe('approval_required');
      const id = errorOf(out).details.approvalId as string;
      expect(errorOf(out).details.decideAt).toBe(`${stack.consoleUrl}/?approval=${id}#approvals`);
      expect(upstream.stats.calls).toBe(before);
      // Declining the link decides nothing: the approval still waits for the owner.
      const { approvals } = await stack.system.api.act<{ approvals: Array<{ id: string; status: string }> }>(
        'ListApprovals',
      );
      expect(approvals.find((a) => a.id === id)?.status).toBe('pending');
    },
  );

  it('a client that declares forms alone, with a token that may not approve, gets the refusal naming the link', async () => {
    const asked: Question[] = [];
    const client = await connect('lean', tokens.plain, { form: {} }, (q) => {
      asked.push(q);
      return Promise.resolve('accept');
    });
    const out = (await client.callTool({ name: 'db__drop_table', arguments: { table: 'forms-only' } })) as Result;
    expect(errorOf(out).code).toBe('approval_required');
    expect(textOf(out)).toContain(`${stack.consoleUrl}/?approval=`);
    expect(asked).toEqual([]);
  });

  it("a --user-may-approve token's client that answers forms and URLs keeps the form question", async () => {
    const asked: Question[] = [];
    const client = await connect('sdk', tokens.mayApprove, { form: {}, url: {} }, (q) => {
      asked.push(q);
      return Promise.resolve('accept');
    });
    const before = upstream.stats.calls;
    const out = (await client.callTool({ name: 'db__drop_table', arguments: { table: 'form-kept' } })) as Result;
    expect(textOf(out)).toBe('dropped form-kept');
    expect(asked.map((q) => q.mode ?? 'form')).toEqual(['form']);
    expect(upstream.stats.calls).toBe(before + 1);
  });

  it("attacks: another token presenting a URL question's state runs nothing; an answer before the owner decided asks again", async () => {
    const caps = { elicitation: { url: {} } };
    const first = await modernCall(url('lean'), tokens.plain, 'db__drop_table', { table: 'stolen' }, caps);
    expect(first.result?.resultType).toBe('input_required');
    const state = first.result?.requestState as string;
    const question = (first.result?.inputRequests as Record<string, { params: Question }>).mcpx_approval!.params;
    const before = upstream.stats.calls;
    // Not decided yet: the answer re-sends, the call still waits, the same question comes back.
    const early = await modernCall(url('lean'), tokens.plain, 'db__drop_table', { table: 'stolen' }, caps, {
      requestState: state,
      inputResponses: { mcpx_approval: { action: 'accept' } },
    });
    expect(early.result?.resultType).toBe('input_required');
    expect(
      approvalOf((early.result?.inputRequests as Record<string, { params: Question }>).mcpx_approval!.params),
    ).toBe(approvalOf(question));
    await stack.system.api.act('ApproveToolCall', { approvalId: approvalOf(question) });
    // Another token's retry with the state: refused, naming the field; nothing runs.
    for (const path of ['lean', 'sdk'] as const) {
      const stolen = await modernCall(url(path), tokens.other, 'db__drop_table', { table: 'stolen' }, caps, {
        requestState: state,
        inputResponses: { mcpx_approval: { action: 'accept' } },
      });
      expect(errorOf(stolen.result as Result)).toMatchObject({
        code: 'invalid_input',
        details: { field: 'requestState' },
      });
    }
    expect(upstream.stats.calls).toBe(before);
    // The owner's token re-sends: it runs once.
    const ran = await modernCall(url('sdk'), tokens.plain, 'db__drop_table', { table: 'stolen' }, caps, {
      requestState: state,
      inputResponses: { mcpx_approval: { action: 'accept' } },
    });
    expect(textOf(ran.result as Result)).toBe('dropped stolen');
    expect(upstream.stats.calls).toBe(before + 1);
  });
});
