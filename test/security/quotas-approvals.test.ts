import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type ApprovalView } from '@mcpx/contracts';
import { loadConfig } from '@mcpx/config';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import type { TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { approvalSystemPerSuite, startApprovalSystem, stoppedCall } from '../approvals/approval-tools.js';
import { askedInput, INPUT_TOOLS, pendingInputs, startInputSystem } from '../inputs/input-system.js';

const MAX = loadConfig('proxy', { OUTBOUND_PROFILE: 'local' }).quotas.pendingApprovalsPerAgent;

/**
 * Pending approvals per agent as an attack on the real proxy (NATS, Redis, Postgres, a real MCP
 * server): an agent asks for approvals until its quota is waiting; the next always_ask call fails
 * with quota_exceeded, no approval is recorded, the server is not called, and another agent of
 * the account still asks.
 */
describe('quotas: pending approvals per agent (proxy)', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    ({ system, upstream } = await startApprovalSystem());
    await system.createAgent('other', ['db'], 3);
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  const pendingOf = async (agent: string): Promise<ApprovalView[]> => {
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    return approvals.filter((a) => a.agent === system.agentId(agent) && a.status === 'pending');
  };

  it(`the ${MAX + 1}st waiting approval of one agent is refused; other agents ask; a decision frees a place`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < MAX; i++)
      ids.push(await stoppedCall(system, 'agent', `r${i}`, 'db__drop_table', { table: `t${i}` }));
    expect(await pendingOf('agent')).toHaveLength(MAX);
    const calls = upstream.stats.calls;
    const refused = await system.callError('agent', 'r-over', 'db__drop_table', { table: 'over' });
    expect(refused.code).toBe('quota_exceeded');
    expect(refused.details).toMatchObject({ field: 'agent', limit: 'pending_approvals_per_agent', max: MAX });
    expect(refused.retryable).toBe(false);
    expect(upstream.stats.calls).toBe(calls);
    expect(await pendingOf('agent')).toHaveLength(MAX);
    // Calls that need no human still run for that agent.
    expect((await system.call('agent', 'r-act', 'db__echo', { text: 'still' })).result.text).toBe('echo: still');
    // Another agent of the account is not held by this one's queue.
    expect(await stoppedCall(system, 'other', 'o1', 'db__drop_table', { table: 'x' })).toMatch(/^apr_/);
    // Denying one gives the agent a place again.
    await system.api.act('DenyToolCall', { approvalId: ids[0] });
    expect(await stoppedCall(system, 'agent', 'r-after', 'db__drop_table', { table: 'after' })).toMatch(/^apr_/);
  });
});

/**
 * The same quota under a race: many always_ask calls of one agent at once, spread over two proxy
 * instances. The count and the creation are one step in Redis, so exactly the cap is recorded
 * and every other call is refused with quota_exceeded (before, each call counted the pending
 * list on its own and racing calls passed the cap by the few in flight).
 */
describe('quotas: pending approvals per agent under a race (two proxies)', () => {
  const CAP = 4;
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started), {
    proxies: 2,
    env: { QUOTA_PENDING_APPROVALS_PER_AGENT: String(CAP) },
  });

  it(`${CAP * 6} racing calls of one agent record exactly ${CAP} approvals; the rest are quota_exceeded, none reaches the server`, async () => {
    const calls = upstream.stats.calls;
    const outcomes = await Promise.all(
      Array.from({ length: CAP * 6 }, (_, i) =>
        system.callError('agent', `race-${i}`, 'db__drop_table', { table: `t${i}` }),
      ),
    );
    const codes = outcomes.map((e) => e.code);
    expect(codes.filter((c) => c === 'approval_required')).toHaveLength(CAP);
    expect(codes.filter((c) => c === 'quota_exceeded')).toHaveLength(CAP * 5);
    expect(upstream.stats.calls).toBe(calls);
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    expect(approvals.filter((a) => a.agent === system.agentId('agent') && a.status === 'pending')).toHaveLength(CAP);
    // An approval decided frees exactly one place, also for a racing pair.
    const first = outcomes.find((e) => e.code === 'approval_required')?.details.approvalId;
    await system.api.act('ApproveToolCall', { approvalId: first });
    const again = await Promise.all(
      [0, 1, 2].map((i) => system.callError('agent', `again-${i}`, 'db__drop_table', { table: `a${i}` })),
    );
    expect(again.map((e) => e.code).sort()).toEqual(['approval_required', 'quota_exceeded', 'quota_exceeded']);
  });
});

/** Every Redis key of the system's namespace that starts with `kind`, with its size: what a refusal must leave as it was. */
async function keysOf(redis: Redis, system: ProxySystem, kind: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${system.env.REDIS_PREFIX ?? ''}${kind}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      out[key] =
        type === 'zset' ? await redis.zcard(key) : type === 'hash' ? await redis.hlen(key) : await redis.strlen(key);
    }
  } while (cursor !== '0');
  return out;
}

/** A second account of the same deployment: its own key, the same server set, one agent granted it. */
async function otherAccount(
  system: ProxySystem,
  server: string,
  url: string,
  minTools: number,
): Promise<{ account: string; agent: string }> {
  const api = new ApiClient(system.api.apiUrl);
  await api.act('SetMcpServer', { name: server, config: { url } });
  const { agent } = await api.act<{ agent: { id: string } }>('CreateAgent', {
    name: 'other-agent',
    definition: { mcpServers: [server] },
  });
  await eventually(
    async () =>
      (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent: agent.id })).tools.length >= minTools
        ? true
        : undefined,
    15_000,
    'tools projected onto the other account',
  );
  return { account: api.principal, agent: agent.id };
}

/** The typed error of a call of another account (fails the test if it succeeds). */
async function callErrorAs(
  system: ProxySystem,
  who: { account: string; agent: string },
  run: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<WireError> {
  try {
    await system.client.call({ account: who.account, agent: who.agent, run, tool, arguments: args });
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error(`${tool} succeeded, an error was expected`);
}

/**
 * Pending approvals per account as an attack on the real proxy (two instances, NATS, Redis,
 * Postgres, a real MCP server): the per-agent cap alone let an account with many agents keep
 * agents × 50 approvals (each with up to 64 KiB of shown arguments) in the Redis that also keeps
 * the nonces. Many agents of one account race always_ask calls; exactly the account's cap is
 * recorded, every other call is quota_exceeded naming the account's quota, nothing more is
 * written (no record, no index entry, no event), the server is never called, and another account
 * of the deployment still asks for its approvals.
 */
describe('quotas: pending approvals per account (two proxies)', () => {
  const CAP = 6;
  const AGENTS = ['agent', 'a1', 'a2', 'a3', 'a4', 'a5'];
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let redis: Redis;

  beforeAll(async () => {
    ({ system, upstream } = await startApprovalSystem({
      proxies: 2,
      env: { QUOTA_PENDING_APPROVALS_PER_ACCOUNT: String(CAP) },
    }));
    await Promise.all(AGENTS.slice(1).map((a) => system.createAgent(a, ['db'], 3)));
    redis = new Redis(serviceUrls().redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await system?.stop();
    await upstream?.close();
  });

  it(`${AGENTS.length * 3} racing calls of ${AGENTS.length} agents record exactly ${CAP} approvals; the rest, and the next, are quota_exceeded for the account and write nothing; another account asks; a decision frees a place`, async () => {
    const events: string[] = [];
    const sub = system.nc.subscribe(system.subjects.approvalRequested(system.account), {
      callback: (_err, msg) => {
        events.push(msg.subject);
      },
    });
    const calls = upstream.stats.calls;
    const outcomes = await Promise.all(
      AGENTS.flatMap((a) =>
        [0, 1, 2].map((i) => system.callError(a, `${a}-race-${i}`, 'db__drop_table', { table: `${a}${i}` })),
      ),
    );
    const codes = outcomes.map((e) => e.code);
    expect(codes.filter((c) => c === 'approval_required')).toHaveLength(CAP);
    const refusals = outcomes.filter((e) => e.code === 'quota_exceeded');
    expect(refusals).toHaveLength(AGENTS.length * 3 - CAP);
    for (const e of refusals) {
      expect(e.details).toMatchObject({
        field: 'account',
        limit: 'pending_approvals_per_account',
        max: CAP,
        tool: 'db__drop_table',
      });
      expect(e.retryable).toBe(false);
    }
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    expect(approvals.filter((a) => a.status === 'pending')).toHaveLength(CAP);

    // One more, from an agent with nothing waiting of its own: refused, and not a key of the
    // approvals' changes (records, the account's, the agents' and every account's indexes).
    await system.createAgent('late', ['db'], 3);
    const before = await keysOf(redis, system, 'approval');
    const late = await system.callError('late', 'late-1', 'db__drop_table', { table: 'late' });
    expect(late.code).toBe('quota_exceeded');
    expect(late.details).toMatchObject({ field: 'account', limit: 'pending_approvals_per_account', max: CAP });
    expect(await keysOf(redis, system, 'approval')).toEqual(before);
    // No approval-requested event but for the recorded ones; the server was never called.
    await system.nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    sub.unsubscribe();
    expect(events).toHaveLength(CAP);
    expect(upstream.stats.calls).toBe(calls);
    // Calls that need no human still run for the account.
    expect((await system.call('late', 'late-2', 'db__echo', { text: 'still' })).result.text).toBe('echo: still');

    // Another account of the deployment is not held by this one's queue.
    const other = await otherAccount(system, 'db', upstream.url, 3);
    const asked = await callErrorAs(system, other, 'o-1', 'db__drop_table', { table: 'x' });
    expect(asked.code).toBe('approval_required');

    // Denying one gives the account one place again, for any of its agents.
    const first = outcomes.find((e) => e.code === 'approval_required')?.details.approvalId;
    await system.api.act('DenyToolCall', { approvalId: first });
    expect(await stoppedCall(system, 'late', 'late-3', 'db__drop_table', { table: 'after' })).toMatch(/^apr_/);
    expect((await system.callError('a1', 'a1-after', 'db__drop_table', { table: 'again' })).details).toMatchObject({
      limit: 'pending_approvals_per_account',
    });
  });
});

/**
 * The same for input requests (their own quota, QUOTA_PENDING_INPUTS_PER_ACCOUNT): many agents of
 * one account call a tool whose server asks a person a question; exactly the cap is recorded,
 * the rest are quota_exceeded naming the account's input quota and write nothing, and another
 * account's agent is still asked.
 */
describe('quotas: pending input requests per account (proxy)', () => {
  const CAP = 3;
  const AGENTS = ['ops-agent', 'i1', 'i2'];
  let system: ProxySystem;
  let upstream: InputMcpServer;
  let redis: Redis;

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem({ env: { QUOTA_PENDING_INPUTS_PER_ACCOUNT: String(CAP) } }));
    await Promise.all(AGENTS.slice(1).map((a) => system.createAgent(a, ['ops'], INPUT_TOOLS)));
    redis = new Redis(serviceUrls().redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await system?.stop();
    await upstream?.close();
  });

  it(`${AGENTS.length * 2} racing calls of ${AGENTS.length} agents record exactly ${CAP} input requests; the rest are quota_exceeded for the account and write nothing; another account is asked`, async () => {
    const outcomes = await Promise.all(
      AGENTS.flatMap((a) =>
        [0, 1].map((i) => system.callError(a, `${a}-dep-${i}`, 'ops__deploy', { env: `prod-${i}` })),
      ),
    );
    expect(outcomes.filter((e) => e.code === 'input_required')).toHaveLength(CAP);
    const refusals = outcomes.filter((e) => e.code === 'quota_exceeded');
    expect(refusals).toHaveLength(AGENTS.length * 2 - CAP);
    for (const e of refusals)
      expect(e.details).toMatchObject({
        field: 'account',
        limit: 'pending_inputs_per_account',
        max: CAP,
        tool: 'ops__deploy',
      });
    expect(await pendingInputs(system)).toHaveLength(CAP);

    const before = await keysOf(redis, system, 'input');
    const again = await system.callError('i1', 'i1-again', 'ops__deploy', { env: 'again' });
    expect(again.details).toMatchObject({ field: 'account', limit: 'pending_inputs_per_account', max: CAP });
    expect(await keysOf(redis, system, 'input')).toEqual(before);
    expect(await pendingInputs(system)).toHaveLength(CAP);

    const other = await otherAccount(system, 'ops', upstream.url, INPUT_TOOLS);
    const asked = await askedInput(
      system.client.call({
        account: other.account,
        agent: other.agent,
        run: 'o-dep',
        tool: 'ops__deploy',
        arguments: { env: 'prod' },
      }),
    );
    expect(asked.inputRequestId).toMatch(/^inp_/);
  });
});
