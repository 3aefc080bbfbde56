/**
 * Who may hold shared state, as attacks on the real services (registry, projector, proxy; NATS,
 * Postgres, Redis; a real MCP server):
 * - with accounts closed (ACCOUNTS=closed, as compose and k8s run), a fresh key is refused before
 *   anything is written or kept (no account row, no nonce), and the operator's command creates
 *   the accounts that may act;
 * - with accounts open (`npm start`), fresh accounts flooding approvals (and questions) stop at the
 *   deployment's cap with a typed error, and an earlier account's approval (or question) is still
 *   there to decide (answer) and use;
 * - an account's waiting approvals are charged in bytes: big arguments stop at its byte budget;
 * - the endpoint's runs (`ep-<token>`) are reserved: an AGENT signer cannot use an endpoint
 *   client's approval through InvokeTool, and a runtime's proxy client refuses such runs.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type ApprovalView } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { ProxyClient } from '@mcpx/proxy-client';
import type { TestMcpServer } from '../servers/index.js';
import type { InputMcpServer } from '../servers/input-mcp-server.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { ProxySystem } from '../support/proxy-system.js';
import { ROOT, eventually } from '../support/system.js';
import { actionError, approvalSystemPerSuite, stoppedCall } from '../approvals/approval-tools.js';
import { INPUT_TOOLS, askedInput, failure, resumedText, startInputSystem } from '../inputs/input-system.js';

const run = promisify(execFile);

/** The operator's accounts command, as a process against the system's database. */
async function accountsCommand(
  system: ProxySystem,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const out = await run(
      join(ROOT, 'node_modules/.bin/tsx'),
      [join(ROOT, 'services/registry/src/accounts-command.ts'), ...args],
      {
        cwd: ROOT,
        env: { ...process.env, ...system.env },
        timeout: 60_000,
      },
    );
    return { code: 0, stdout: out.stdout, stderr: out.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

async function accountRows(system: ProxySystem, principal: string): Promise<number> {
  const client = new pg.Client({ connectionString: system.db.url });
  await client.connect();
  try {
    const r = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM registry.accounts WHERE id = $1', [
      principal,
    ]);
    return r.rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

async function keysMatching(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}

describe('accounts closed: only accounts an operator created act', () => {
  let system: ProxySystem;
  let redis: Redis;

  beforeAll(async () => {
    system = await ProxySystem.start({ env: { ACCOUNTS: 'closed' } });
    redis = new Redis(serviceUrls().redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await system?.stop();
  });

  it('a fresh key is refused (forbidden, naming account) with nothing written or kept; the operator creates the account and it acts; others stay refused', async () => {
    const stranger = new ApiClient(system.api.apiUrl);
    for (const type of ['CreateAgent', 'ListMcpServers', 'SetMcpServer']) {
      const err = await actionError(
        stranger.act(type, { name: 'a', definition: { mcpServers: [] }, config: { url: 'https://example.com/mcp' } }),
      );
      expect(err.code, type).toBe('forbidden');
      expect(err.details).toMatchObject({ field: 'account' });
    }
    expect(await accountRows(system, stranger.principal)).toBe(0);
    // Not even the nonces of its envelopes are kept.
    expect(await keysMatching(redis, `${system.env.REDIS_PREFIX ?? ''}nonce:${stranger.principal}:*`)).toEqual([]);
    // A signer of an account that does not exist is refused the same way.
    const signer = new ApiClient(system.api.apiUrl, generateKeyPair(), stranger.principal);
    expect((await actionError(signer.act('ListAgents'))).details).toMatchObject({ field: 'account' });

    // The operator's command: a malformed principal is refused (exit 2), a good one created once.
    expect((await accountsCommand(system, 'create', 'not-a-key')).code).toBe(2);
    const created = await accountsCommand(system, 'create', system.account, system.account);
    expect(created.code, created.stderr).toBe(0);
    expect(
      created.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { principal: system.account, created: true },
      { principal: system.account, created: false },
    ]);
    const listed = (await accountsCommand(system, 'list')).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { principal: string });
    expect(listed.map((a) => a.principal)).toEqual([system.account]);

    // The created account acts, and hands out signers as before.
    await system.api.act('CreateAgent', { name: 'mine', definition: { mcpServers: [] } });
    const writer = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: writer.principal, role: 'WRITER' });
    expect(
      (await new ApiClient(system.api.apiUrl, writer, system.account).act<{ agents: unknown[] }>('ListAgents')).agents,
    ).toHaveLength(1);
    // A fresh key is still refused.
    expect((await actionError(new ApiClient(system.api.apiUrl).act('ListAgents'))).code).toBe('forbidden');
  });
});

/** A fresh account of the deployment (accounts open): its own key, the test server, one agent. */
async function freshAccount(system: ProxySystem, url: string): Promise<{ account: string; agent: string }> {
  const api = new ApiClient(system.api.apiUrl);
  await api.act('SetMcpServer', { name: 'db', config: { url } });
  const { agent } = await api.act<{ agent: { id: string } }>('CreateAgent', {
    name: 'flood',
    definition: { mcpServers: ['db'] },
  });
  await eventually(
    async () =>
      (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent: agent.id })).tools.length >= 3 ? true : undefined,
    15_000,
    'tools projected',
  );
  return { account: api.principal, agent: agent.id };
}

async function callErrorAs(
  client: ProxyClient,
  who: { account: string; agent: string },
  runId: string,
  args: Record<string, unknown>,
): Promise<WireError> {
  try {
    await client.call({ account: who.account, agent: who.agent, run: runId, tool: 'db__drop_table', arguments: args });
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error('the call succeeded, an error was expected');
}

describe('accounts open: waiting approvals charged in bytes, and capped across accounts', () => {
  const TOTAL = 12;
  const BYTES = 40 * 1024;
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started), {
    env: { QUOTA_PENDING_APPROVALS_TOTAL: String(TOTAL), QUOTA_PENDING_APPROVAL_BYTES_PER_ACCOUNT: String(BYTES) },
  });

  it("big arguments stop at the account's byte budget (quota_exceeded naming it, nothing recorded); a flood of fresh accounts stops at the deployment's cap; the first account's approval is decided and used", async () => {
    const mine = await stoppedCall(system, 'agent', 'mine-1', 'db__drop_table', { table: 'orders' });

    // The byte budget: two approvals of 16 KiB arguments fit in 40 KiB, the third does not.
    const big = await freshAccount(system, upstream.url);
    const blob = 'b'.repeat(16 * 1024);
    for (const i of [0, 1])
      expect((await callErrorAs(system.client, big, `big-${i}`, { table: `${blob}${i}` })).code).toBe(
        'approval_required',
      );
    const over = await callErrorAs(system.client, big, 'big-2', { table: `${blob}2` });
    expect(over.code).toBe('quota_exceeded');
    expect(over.details).toMatchObject({ field: 'account', limit: 'pending_approval_bytes_per_account', max: BYTES });
    // Small ones still fit within the account's budget.
    expect((await callErrorAs(system.client, big, 'big-3', { table: 'small' })).code).toBe('approval_required');

    // Three fresh accounts flood: together they fill what is left of the deployment's cap.
    const flooders = await Promise.all([0, 1, 2].map(() => freshAccount(system, upstream.url)));
    const outcomes = await Promise.all(
      flooders.flatMap((f, a) =>
        Array.from({ length: 8 }, (_, i) => callErrorAs(system.client, f, `flood-${a}-${i}`, { table: `t${i}` })),
      ),
    );
    const asked = outcomes.filter((e) => e.code === 'approval_required');
    const refused = outcomes.filter((e) => e.code === 'quota_exceeded');
    expect(asked).toHaveLength(TOTAL - 4);
    expect(refused).toHaveLength(outcomes.length - asked.length);
    for (const e of refused) {
      expect(e.details).toMatchObject({ field: 'global', limit: 'pending_approvals_total', max: TOTAL });
      expect(e.details.retryAfterMs).toBeGreaterThan(0);
    }
    const upstreamCalls = upstream.stats.calls;

    // Nothing of the first account was lost: its approval is listed, decided and used.
    const { approvals } = await system.api.act<{ approvals: ApprovalView[] }>('ListApprovals');
    expect(approvals.map((a) => a.id)).toEqual([mine]);
    await system.api.act('ApproveToolCall', { approvalId: mine });
    const used = await system.call('agent', 'mine-1', 'db__drop_table', { table: 'orders' }, { approvalId: mine });
    expect(used.result.text).toBe('dropped orders');
    expect(upstream.stats.calls).toBe(upstreamCalls + 1);
    // Its decision made room for one more, of anyone.
    expect((await callErrorAs(system.client, flooders[0]!, 'flood-after', { table: 'after' })).code).toBe(
      'approval_required',
    );
  });
});

describe("the endpoint's runs are reserved", () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started));

  it("an AGENT signer cannot use an endpoint client's approval (InvokeTool refuses the run, invalid_input naming run); the approval stays for the endpoint's call; a runtime's client refuses such runs too", async () => {
    // The endpoint's client calls in the token's run, as services/endpoint does.
    const endpoint = new ProxyClient(system.nc, system.subjects, { endpointRuns: true });
    const tokenRun = 'ep-tok_attackable';
    const agent = system.agentId('agent');
    const call = {
      account: system.account,
      agent,
      run: tokenRun,
      tool: 'db__drop_table',
      arguments: { table: 'users' },
    };
    const first = await endpoint.call(call).then(
      () => undefined,
      (err: unknown) => err as WireError,
    );
    expect(first?.code).toBe('approval_required');
    const approvalId = String(first?.details.approvalId);
    await system.api.act('ApproveToolCall', { approvalId });

    // The attack: an AGENT signer of the account re-sends the call in the endpoint's run.
    const agentKey = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['agent'] });
    const asAgent = new ApiClient(system.api.apiUrl, agentKey, system.account);
    const calls = upstream.stats.calls;
    const refused = await actionError(
      asAgent.act('InvokeTool', {
        agent: 'agent',
        tool: 'db__drop_table',
        arguments: { table: 'users' },
        run: tokenRun,
        approvalId,
      }),
    );
    expect(refused.code).toBe('invalid_input');
    expect(refused.details).toMatchObject({ field: 'run' });
    expect((await actionError(asAgent.act('EndRun', { run: tokenRun }))).details).toMatchObject({ field: 'run' });
    // A runtime's own client (no endpoint) refuses the run before anything is sent.
    await expect(system.client.call({ ...call, approvalId })).rejects.toMatchObject({
      code: 'invalid_input',
      details: { field: 'run' },
    });
    expect(upstream.stats.calls).toBe(calls);

    // The approval is still the endpoint client's to use, once.
    expect((await endpoint.call({ ...call, approvalId })).result.text).toBe('dropped users');
  });
});

describe('accounts open: input requests capped across accounts', () => {
  let system: ProxySystem;
  let upstream: InputMcpServer;

  beforeAll(async () => {
    ({ system, upstream } = await startInputSystem({ env: { QUOTA_PENDING_INPUTS_TOTAL: '3' } }));
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it("fresh accounts' questions stop at the deployment's cap (quota_exceeded naming it); the first account's question is still answered and used", async () => {
    const mine = await askedInput(system.call('ops-agent', 'mine', 'ops__deploy', { env: 'prod' }));
    const api = new ApiClient(system.api.apiUrl);
    await api.act('SetMcpServer', { name: 'ops', config: { url: upstream.url } });
    const { agent } = await api.act<{ agent: { id: string } }>('CreateAgent', {
      name: 'flood',
      definition: { mcpServers: ['ops'] },
    });
    await eventually(
      async () =>
        (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent: agent.id })).tools.length >= INPUT_TOOLS
          ? true
          : undefined,
      15_000,
      'tools',
    );
    const flood = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        failure(
          system.client.call({
            account: api.principal,
            agent: agent.id,
            run: `f-${i}`,
            tool: 'ops__deploy',
            arguments: { env: `e${i}` },
          }),
        ),
      ),
    );
    expect(flood.filter((e) => e.code === 'input_required')).toHaveLength(2);
    for (const e of flood.filter((x) => x.code !== 'input_required')) {
      expect(e.code).toBe('quota_exceeded');
      expect(e.details).toMatchObject({ field: 'global', limit: 'pending_inputs_total', max: 3 });
    }
    await system.api.act('AnswerInputRequest', {
      id: mine.inputRequestId,
      action: 'accept',
      content: { confirm: true },
    });
    expect(await resumedText(system, 'ops-agent', 'mine', 'ops__deploy', { env: 'prod' }, mine.inputRequestId)).toBe(
      'Deployed to prod',
    );
  });
});
