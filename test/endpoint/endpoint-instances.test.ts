import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { NatsConnection } from '@nats-io/transport-node';
import { encodePayload, makeSubjects, type ApprovalDecidedEvent, type Subjects } from '@mcpx/contracts';
import { approvalTools } from '../approvals/approval-tools.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { uniqueNamespace } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { SseSubscriber } from '../support/sse-client.js';
import { StreamText, answerLegacy, callLegacy, initializeLegacy } from '../support/fixtures/legacy-raw-client.js';
import { ProcessSystem, eventually } from '../support/system.js';
import { errorOf } from './endpoint-harness.js';
import { startEndpointProcess, type EndpointProcess } from '../support/fixtures/endpoint-process.js';

const textOf = (result: object): string =>
  ((result as { content?: unknown }).content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';

/**
 * The endpoint as deployed: two endpoint processes behind no affinity, the services as processes,
 * every one on its own NATS user of a least-privilege NATS (the endpoint on `endpoint`, not the
 * runtime's). Issue 14's last points:
 * - a decision the client's user takes through the endpoint is announced as `approval-decided`,
 *   so the account's event stream (the console) sees it without a reload; a runtime's credentials
 *   still cannot announce one (the forged notice is refused and reaches nobody);
 * - a 2025 client's answer to a question, and what it declared in its initialize, reach the
 *   instance that holds its call, whichever instance they were posted to.
 */
describe('the agent MCP endpoint on two instances (its own NATS user, no affinity)', () => {
  let nats: NatsAuthServer;
  let system: ProcessSystem;
  let upstream: TestMcpServer;
  let api: ApiClient;
  let stream: SseSubscriber;
  let subjects: Subjects;
  const endpoints: EndpointProcess[] = [];
  const conns: NatsConnection[] = [];
  const clients: Array<{ close(): Promise<void> }> = [];
  const prefix = uniqueNamespace().natsPrefix;

  const startEndpoint = async (i: number): Promise<void> => {
    const started = await startEndpointProcess(
      system,
      { ...nats.env('endpoint'), ENDPOINT_LEAN_CALLS: 'on' },
      { publicUrl: true, instance: `endpoint-${i}` },
    );
    endpoints[i] = started;
  };

  const agentUrl = (e: EndpointProcess, agent: string): string => `${e.url}/v1/agents/${encodeURIComponent(agent)}/mcp`;
  const token = (agent: string, fields: Record<string, unknown> = {}): Promise<{ token: string; id: string }> =>
    api.act('CreateAgentToken', { agent, ...fields });

  beforeAll(async () => {
    nats = await NatsAuthServer.start({ prefix });
    [system, upstream] = await Promise.all([
      ProcessSystem.start({ env: { NATS_PREFIX: prefix }, natsEnv: (s) => nats.env(s) }),
      startTestMcpServer({ era: 'modern', tools: approvalTools() }),
    ]);
    subjects = makeSubjects(prefix);
    api = new ApiClient(system.apiUrl);
    await api.act('SetMcpServer', { name: 'db', config: { url: upstream.url } });
    const agent = (
      await api.act<{ agent: { id: string } }>('CreateAgent', { name: 'ops', definition: { mcpServers: ['db'] } })
    ).agent.id;
    await eventually(
      async () =>
        (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length >= 3 ? true : undefined,
      30_000,
      'tools projected',
    );
    await Promise.all([startEndpoint(0), startEndpoint(1)]);
    stream = await SseSubscriber.open(api);
  }, 180_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const nc of conns) await nc.close().catch(() => undefined);
    await stream?.close();
    await Promise.all(endpoints.map((e) => e.stop()));
    await upstream?.close();
    await system?.stop();
    await nats?.stop();
  });

  it("a modern client's user approves through one instance: the console's event stream hears the decision at once, and the call runs once", async () => {
    const approver = await token('ops', { userMayApprove: true });
    const client = new Client(
      { name: 'user-approval', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', () => Promise.resolve({ action: 'accept' as const, content: {} }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(agentUrl(endpoints[0]!, 'ops')), {
        requestInit: { headers: { authorization: `Bearer ${approver.token}` } },
      }),
    );
    clients.push(client);
    const before = upstream.stats.calls;
    const ran = await client.callTool({ name: 'db__drop_table', arguments: { table: 'announced' } });
    expect(textOf(ran)).toBe('dropped announced');
    expect(upstream.stats.calls).toBe(before + 1);
    const requested = await stream.waitFor(
      'approval-requested',
      (d) => d.tool === 'db__drop_table' && d.run === `ep-${approver.id}`,
    );
    const decided = await stream.waitFor('approval-decided', (d) => d.approvalId === requested.data.approvalId);
    expect(decided.data).toMatchObject({
      decision: 'approved',
      run: `ep-${approver.id}`,
      tool: 'db__drop_table',
      server: 'db',
    });
    // As the owner's notice: the call named, never its arguments.
    expect(stream.raw).not.toContain('announced');
  });

  it('a runtime cannot announce a decision: the forged notice is refused by NATS and reaches no console', async () => {
    const runtime = await nats.connectAs('runtime');
    conns.push(runtime);
    const forged: ApprovalDecidedEvent = {
      account: api.principal,
      approvalId: 'apr_forged_by_runtime',
      agent: 'ops',
      run: 'run-1',
      tool: 'db__drop_table',
      server: 'db',
      decision: 'approved',
      decidedBy: 'owner',
      decidedAt: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    };
    const refused = await runtime
      .request(subjects.approvalDecided(api.principal), encodePayload(forged), { timeout: 5_000 })
      .then(
        () => undefined,
        (e: Error) => e.message,
      );
    expect(refused).toMatch(/permissions violation/i);
    // The endpoint's own user may announce one (that is its right), but may not answer calls nor publish account events.
    const endpoint = await nats.connectAs('endpoint');
    conns.push(endpoint);
    const notAnswering = endpoint.subscribe(subjects.proxyCall);
    expect(String(await notAnswering.closed)).toMatch(/permissions violation/i);
    const noEvents = await endpoint
      .request(subjects.serverDiscovered(api.principal, 'db'), new Uint8Array(), { timeout: 5_000 })
      .then(
        () => undefined,
        (e: Error) => e.message,
      );
    expect(noEvents).toMatch(/permissions violation/i);
    // A real decision announced after the forged one arrives; the forged one never does.
    const other = await token('ops', { userMayApprove: true });
    const client = new Client(
      { name: 'after-forgery', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', () => Promise.resolve({ action: 'decline' as const }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(agentUrl(endpoints[1]!, 'ops')), {
        requestInit: { headers: { authorization: `Bearer ${other.token}` } },
      }),
    );
    clients.push(client);
    const declined = await client.callTool({ name: 'db__drop_table', arguments: { table: 'after' } });
    expect(errorOf(declined as never)).toMatchObject({ code: 'approval_refused', details: { reason: 'denied' } });
    await stream.waitFor('approval-decided', (d) => d.run === `ep-${other.id}` && d.decision === 'denied');
    expect(stream.events.some((e) => e.data?.approvalId === forged.approvalId)).toBe(false);
  });

  it("only the endpoint asks the registry to audit a token holder's decision: the runtime's and the proxy's requests are refused by NATS and write nothing", async () => {
    // A decision through an endpoint process on its own user: the registry wrote its entry.
    const approver = await token('ops', { userMayApprove: true });
    const client = new Client(
      { name: 'audited', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', () => Promise.resolve({ action: 'decline' as const }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(agentUrl(endpoints[0]!, 'ops')), {
        requestInit: { headers: { authorization: `Bearer ${approver.token}` } },
      }),
    );
    clients.push(client);
    const declined = await client.callTool({ name: 'db__drop_table', arguments: { table: 'audit-attack' } });
    const approvalId = errorOf(declined).details.approvalId as string;
    type Audit = { action: string; signer: string; target: { name: string } };
    const entries = async (): Promise<Audit[]> =>
      (await api.act<{ events: Audit[] }>('ListAuditEvents', {})).events.filter((e) => e.target.name === approvalId);
    expect((await entries()).map((e) => [e.action, e.signer])).toEqual([
      ['DenyToolCall', `agent-token:${approver.id}`],
    ]);
    // Anyone else asking (to fill the log, or to learn which approvals exist) is refused by NATS.
    for (const role of ['runtime', 'proxy', 'projector'] as const) {
      const nc = await nats.connectAs(role);
      conns.push(nc);
      const refused = await nc
        .request(subjects.registryTokenDecisionAudit, encodePayload({ account: api.principal, approvalId }), {
          timeout: 5_000,
        })
        .then(
          () => undefined,
          (e: Error) => e.message,
        );
      expect(refused, role).toMatch(/permissions violation/i);
    }
    // Nor may anyone but the registry answer it (a fake registry would swallow the entries).
    const endpointUser = await nats.connectAs('endpoint');
    conns.push(endpointUser);
    const fake = endpointUser.subscribe(subjects.registryTokenDecisionAudit);
    expect(String(await fake.closed)).toMatch(/permissions violation/i);
    expect(await entries()).toHaveLength(1);
  });

  it("a 2025 client's answer posted to the other instance goes on with the call there; another token's answer is not taken", async () => {
    const { token: t } = await token('ops', { userMayApprove: true });
    const intruder = await token('ops', { userMayApprove: true });
    const [a, b] = [endpoints[0]!, endpoints[1]!];
    // The initialize reaches B; the call reaches A (which learns from B what the client declared).
    await initializeLegacy(agentUrl(b, 'ops'), t);
    const before = upstream.stats.calls;
    const stream = new StreamText(await callLegacy(agentUrl(a, 'ops'), t, 'db__drop_table', { table: 'elsewhere' }));
    await stream.until('elicitation/create');
    const question = stream.firstMessage<{ id: string; method: string }>();
    // The question's id names the instance that asked it (A).
    expect(question.id).toMatch(/^mcpx-q\.endpoint-0-\d+\./);
    const answer = (bearer: string, action: 'accept' | 'decline', id = question.id): Promise<Response> =>
      answerLegacy(agentUrl(b, 'ops'), bearer, id, action);
    // A decline for a question of an instance that does not exist is taken by nobody.
    await (await answer(t, 'decline', `mcpx-q.endpoint-gone.${randomUUID()}`)).text();
    // Another token's decline, posted to B, is not taken by A (had it been, the call would end refused).
    await (await answer(intruder.token, 'decline')).text();
    // The client's own answer, posted to B, is taken by A: the call runs there, once.
    expect((await answer(t, 'accept')).status).toBe(202);
    expect(await stream.until('"id":2')).toContain('dropped elsewhere');
    expect(upstream.stats.calls).toBe(before + 1);
  });

  it('a real SDK v1 client behind the worst balancer (initialize to one instance, call to the other, answer back to the first) approves and its call runs', async () => {
    const { token: t } = await token('ops', { userMayApprove: true });
    const [a, b] = [endpoints[0]!, endpoints[1]!];
    const routed: string[] = [];
    // Sends each POST by what it carries; the rest (the GET stream) to A.
    const balancer = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
      const target = body.method === 'tools/call' ? b : a;
      routed.push(`${body.method ?? (init?.method === 'GET' ? 'GET' : 'answer')}→${target === a ? 'A' : 'B'}`);
      const url = new URL(input instanceof Request ? input.url : input.toString());
      return fetch(new URL(url.pathname + url.search, target.url), init);
    };
    const asked: string[] = [];
    const client = new ClientV1({ name: 'legacy-balanced', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(String(req.params.message));
      return Promise.resolve({ action: 'accept' as const, content: {} });
    });
    await client.connect(
      new TransportV1(new URL(agentUrl(a, 'ops')), {
        fetch: balancer,
        requestInit: { headers: { authorization: `Bearer ${t}` } },
      }),
    );
    clients.push(client);
    const before = upstream.stats.calls;
    const ran = await client.callTool({ name: 'db__drop_table', arguments: { table: 'balanced' } });
    expect(textOf(ran), JSON.stringify(ran)).toBe('dropped balanced');
    expect(asked).toHaveLength(1);
    expect(upstream.stats.calls).toBe(before + 1);
    expect(routed).toContain('initialize→A');
    expect(routed).toContain('tools/call→B');
    expect(routed).toContain('answer→A');
  });
});
