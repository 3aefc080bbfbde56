import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { TestMcpServer } from '../servers/index.js';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { INPUT_TOOLS } from '../inputs/input-system.js';
import { StreamText, answerLegacy, callLegacy, initializeLegacy } from '../support/fixtures/legacy-raw-client.js';
import { errorOf, startEndpointApprovalSystem, type EndpointSystem } from './endpoint-harness.js';
import { withBearer } from '../support/fixtures/bearer.js';

const textOf = (result: object): string =>
  ((result as { content?: unknown }).content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';

/**
 * Approval by the client's user for 2025-era clients: a real SDK v1 client that
 * declared elicitation in its initialize gets an `elicitation/create` request on its call's SSE
 * stream (the lean path's doing: the SDK's stateless legacy serving cannot send one) and its
 * answer goes on with the call (a server's question the agent lets its runtime answer too); a
 * client that declared none keeps the isError answer naming the approval, as does every 2025
 * client when the lean path is off.
 */
describe.skipIf(process.env.ENDPOINT_LEAN_CALLS === 'off')(
  'the agent MCP endpoint: the client user approves (2025 clients)',
  () => {
    let sys: EndpointSystem;
    let upstream: TestMcpServer;
    let inputs: InputMcpServer;
    const clients: Client[] = [];

    const connect = async (
      token: string,
      answer: 'accept' | 'decline' | undefined,
      asked: string[],
      agent = 'ops',
      content: Record<string, unknown> = {},
    ): Promise<Client> => {
      const client = new Client(
        { name: 'legacy-approver', version: '1.0.0' },
        { capabilities: answer === undefined ? {} : { elicitation: {} } },
      );
      if (answer !== undefined) {
        client.setRequestHandler(ElicitRequestSchema, (req) => {
          asked.push(String(req.params.message));
          return Promise.resolve(
            answer === 'accept' ? { action: 'accept' as const, content } : { action: 'decline' as const },
          );
        });
      }
      await client.connect(new StreamableHTTPClientTransport(new URL(sys.urlOf(agent)), withBearer(token)));
      clients.push(client);
      return client;
    };

    beforeAll(async () => {
      [{ sys, upstream }, inputs] = await Promise.all([startEndpointApprovalSystem(), startInputMcpServer()]);
      await sys.system.setServer('deploys', inputs.url);
      const runtime = await sys.system.createAgent('answers', ['deploys'], INPUT_TOOLS);
      await sys.system.api.act('UpdateAgent', {
        agent: runtime,
        definition: { mcpServers: ['deploys'], inputs: { forms: 'runtime' } },
      });
    }, 120_000);

    afterAll(async () => {
      for (const c of clients) await c.close().catch(() => undefined);
      await sys?.stop();
      await Promise.all([upstream?.close(), inputs?.close()]);
    });

    it("a server's question the agent lets its runtime answer reaches the v1 client the same way", async () => {
      const { token } = await sys.token('answers');
      const asked: string[] = [];
      const client = await connect(token, 'accept', asked, 'answers', { confirm: true });
      const done = await client.callTool({ name: 'deploys__deploy', arguments: { env: 'eu' } });
      expect(textOf(done), JSON.stringify(done)).toBe('Deployed to eu');
      expect(asked).toEqual(['Deploy to eu?']);
    });

    it('asks a v1 client that declared elicitation during its call; accepted, the call runs once', async () => {
      const { token } = await sys.token('ops', { userMayApprove: true });
      const asked: string[] = [];
      const client = await connect(token, 'accept', asked);
      const before = upstream.stats.calls;
      const ran = await client.callTool({ name: 'db__drop_table', arguments: { table: 'legacy' } });
      expect(ran.isError, textOf(ran)).toBeFalsy();
      expect(textOf(ran)).toBe('dropped legacy');
      expect(asked).toEqual(['Approve db__drop_table with these arguments?\n{\n  "table": "legacy"\n}']);
      expect(upstream.stats.calls).toBe(before + 1);
    });

    it('declined by the v1 client, the call does not run', async () => {
      const { token } = await sys.token('ops', { userMayApprove: true });
      const asked: string[] = [];
      const client = await connect(token, 'decline', asked);
      const before = upstream.stats.calls;
      const refused = await client.callTool({ name: 'db__drop_table', arguments: { table: 'kept' } });
      expect(errorOf(refused as never)).toMatchObject({ code: 'approval_refused', details: { reason: 'denied' } });
      expect(asked).toHaveLength(1);
      expect(upstream.stats.calls).toBe(before);
    });

    it("another token cannot answer a client's question (its decline is not taken), nor is a made-up question; the client's own answer runs the call", async () => {
      const { token } = await sys.token('ops', { userMayApprove: true });
      const intruder = await sys.token('ops', { userMayApprove: true });
      const url = sys.urlOf('ops');
      // The raw client: its initialize declares elicitation; its call's SSE stream is read as it comes.
      await initializeLegacy(url, token);
      const before = upstream.stats.calls;
      const stream = new StreamText(await callLegacy(url, token, 'db__drop_table', { table: 'guarded' }));
      await stream.until('elicitation/create');
      const question = stream.firstMessage<{ id: string; method: string }>();
      expect(question.method).toBe('elicitation/create');
      const answer = (id: string, t: string, action: 'accept' | 'decline' = 'accept'): Promise<Response> =>
        answerLegacy(url, t, id, action);
      // Another token's decline (had it been taken, the call would end refused, whatever came next).
      await (await answer(question.id, intruder.token, 'decline')).text();
      await (await answer('mcpx-q-made-up', token, 'decline')).text();
      // The client's own answer: the call runs, once.
      expect((await answer(question.id, token)).status).toBe(202);
      expect(await stream.until('"id":2')).toContain('dropped guarded');
      expect(upstream.stats.calls).toBe(before + 1);
    });

    it('a client that goes away while asked leaves the approval to the owner; nothing runs', async () => {
      const { token } = await sys.token('ops', { userMayApprove: true });
      const url = sys.urlOf('ops');
      await initializeLegacy(url, token);
      const before = upstream.stats.calls;
      const gone = new AbortController();
      const call = await callLegacy(url, token, 'db__drop_table', { table: 'abandoned' }, gone.signal);
      expect(await new StreamText(call).until('elicitation/create')).toContain('elicitation/create');
      gone.abort();
      const { approvals } = await sys.system.api.act<{ approvals: Array<{ id: string; arguments: unknown }> }>(
        'ListApprovals',
        {},
      );
      const pending = approvals.find((a) => (a.arguments as { table?: string }).table === 'abandoned');
      expect(pending).toBeDefined();
      // The owner can still approve it (nobody decided it), and the call never ran.
      await sys.system.api.act('ApproveToolCall', { approvalId: pending!.id });
      expect(upstream.stats.calls).toBe(before);
    });

    it('a v1 client that declared no elicitation, or a token without the right, waits for the owner', async () => {
      const { token } = await sys.token('ops', { userMayApprove: true });
      const silent = await connect(token, undefined, []);
      const stopped = await silent.callTool({ name: 'db__drop_table', arguments: { table: 'silent' } });
      expect(errorOf(stopped as never).code).toBe('approval_required');
      const plain = await sys.token('ops');
      const asked: string[] = [];
      const willing = await connect(plain.token, 'accept', asked);
      const waiting = await willing.callTool({ name: 'db__drop_table', arguments: { table: 'plain' } });
      expect(errorOf(waiting as never).code).toBe('approval_required');
      expect(asked).toEqual([]);
    });
  },
);
