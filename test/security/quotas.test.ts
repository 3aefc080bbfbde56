import { request } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePayload, type ActionEnvelope, type ApprovalRequestedEvent } from '@mcpx/contracts';
import { loadConfig } from '@mcpx/config';
import { generateKeyPair } from '@mcpx/envelope';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { openEventStream, type OpenedEventStream } from '../support/fixtures/event-streams.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { SseSubscriber } from '../support/sse-client.js';
import { eventually } from '../support/system.js';

interface Answer {
  status: number;
  retryAfter: string | null;
  body: any;
}

/** The configuration's defaults (the registry runs with them here). */
const QUOTA_DEFAULTS = loadConfig('registry', { OUTBOUND_PROFILE: 'local' }).quotas;

/** Posts a signed envelope (or any body) and keeps the status and `Retry-After`. */
async function post(apiUrl: string, body: unknown): Promise<Answer> {
  const res = await fetch(new URL('/v1/actions', apiUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep text
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: parsed };
}

/** Opens the event stream and answers its status (and error body when refused), keeping it open when accepted. */
function openStream(api: ApiClient): Promise<OpenedEventStream> {
  return openEventStream(api.apiUrl, api);
}

/** Copies one of the account's rows `n` times under fresh ids and names (a quota filled without n discoveries). */
async function fill(
  h: RegistryHarness,
  table: 'mcp_servers' | 'agents',
  account: string,
  n: number,
  overrides: Record<string, string>,
): Promise<void> {
  const cols = await sql<{
    c: string;
  }>`SELECT column_name AS c FROM information_schema.columns WHERE table_schema = 'registry' AND table_name = ${table} ORDER BY ordinal_position`.execute(
    h.sql,
  );
  const select = cols.rows.map(({ c }) => overrides[c] ?? `t.${c}`).join(', ');
  const names = cols.rows.map(({ c }) => c).join(', ');
  await sql
    .raw(
      `INSERT INTO registry.${table} (${names}) SELECT ${select} FROM (SELECT * FROM registry.${table} WHERE account_id = '${account}' LIMIT 1) t, generate_series(1, ${n}) g`,
    )
    .execute(h.sql);
}

async function count(h: RegistryHarness, table: 'mcp_servers' | 'agents', account: string): Promise<number> {
  const r = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM ${sql.table(`registry.${table}`)} WHERE account_id = ${account}`.execute(h.sql);
  return r.rows[0]?.n ?? 0;
}

/** Sends a POST from another loopback address (e.g. 127.0.0.2), i.e. another client. */
function postFrom(localAddress: string, apiUrl: string, body: unknown): Promise<Answer> {
  const url = new URL('/v1/actions', apiUrl);
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // keep text
          }
          const retryAfter = res.headers['retry-after'];
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
            body: parsed,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/**
 * The buckets of the rate-limit tests: a fifth of a token a second. At the defaults (20 and 50 a
 * second) a loaded box sends a burst more slowly than the bucket refills, and then nothing is
 * refused and the test proves nothing; at this rate a burst of twenty would have to take over a
 * minute to be refilled. The code is the one the defaults run through (the first test checks
 * the default values).
 */
const SLOW_RATE = '0.2';
const SLOW_BURST = 5;

/**
 * Quotas and rate limits as attacks on the real registry (Postgres, Redis, NATS, the projector):
 * one account tries to hold more than its share; each attempt is refused with the typed error
 * naming the limit, nothing is written, and another account goes on as before.
 */
describe('quotas and rate limits: the registry', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let owner: ApiClient;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([RegistryHarness.start(), startTestMcpServer({ tools: [echoTool()] })]);
    owner = h.api();
    await owner.act('SetMcpServer', { name: 'up', config: { url: upstream.url } });
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  it('the defaults are the documented ones; each is configurable, a malformed value is refused naming its variable', () => {
    expect(QUOTA_DEFAULTS).toMatchObject({
      serversPerAccount: 200,
      agentsPerAccount: 10_000,
      pendingApprovalsPerAgent: 50,
      eventStreamsPerAccount: 20,
      actionsPerSigner: { ratePerSecond: 20, burst: 80 },
      actionsPerAddress: { ratePerSecond: 50 },
    });
    const set = loadConfig('registry', {
      OUTBOUND_PROFILE: 'local',
      QUOTA_SERVERS_PER_ACCOUNT: '3',
      RATE_ACTIONS_PER_SIGNER: '5',
      PROXY_MAX_RUNS: '0',
    }).quotas;
    expect(set).toMatchObject({
      serversPerAccount: 3,
      actionsPerSigner: { ratePerSecond: 5, burst: 10 },
      runsPerProxy: 0,
    });
    expect(() => loadConfig('registry', { OUTBOUND_PROFILE: 'local', QUOTA_AGENTS_PER_ACCOUNT: '-1' })).toThrow(
      /QUOTA_AGENTS_PER_ACCOUNT/,
    );
    expect(() => loadConfig('registry', { OUTBOUND_PROFILE: 'local', RATE_ACTIONS_PER_ADDRESS: 'fast' })).toThrow(
      /RATE_ACTIONS_PER_ADDRESS/,
    );
  });

  it('servers per account: the 201st is refused (quota_exceeded naming name), nothing written; updates and other accounts go on', async () => {
    const max = QUOTA_DEFAULTS.serversPerAccount;
    await fill(h, 'mcp_servers', owner.principal, max - 1, {
      id: `'fill-' || g || '-' || md5(random()::text)`,
      name: `'fill' || g`,
      url: `'https://fill.invalid/mcp'`,
      next_probe_at: 'NULL',
    });
    expect(await count(h, 'mcp_servers', owner.principal)).toBe(max);
    const before = await h.settledDigest();
    const refused = await post(
      h.apiUrl,
      owner.envelope({ type: 'SetMcpServer', name: 'one-more', config: { url: upstream.url } }),
    );
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'quota_exceeded',
      details: { field: 'name', limit: 'servers_per_account', max },
    });
    expect(refused.body.error.details.retryAfterMs).toBeUndefined();
    expect(await h.tableDigest()).toEqual(before);
    // Updating a server the account holds is no new server.
    await expect(owner.act('SetMcpServer', { name: 'up', config: { url: upstream.url } })).resolves.toMatchObject({
      server: { name: 'up' },
    });
    // Another account is unaffected.
    const other = h.api();
    await expect(other.act('SetMcpServer', { name: 'one-more', config: { url: upstream.url } })).resolves.toMatchObject(
      { server: { name: 'one-more' } },
    );
    // Deleting one frees a place.
    await owner.act('DeleteMcpServer', { name: 'fill1' });
    await expect(owner.act('SetMcpServer', { name: 'one-more', config: { url: upstream.url } })).resolves.toMatchObject(
      { server: { name: 'one-more' } },
    );
    expect(await count(h, 'mcp_servers', owner.principal)).toBe(max);
  });

  it('agents per account: creating past the quota is refused, nothing written; another account creates', async () => {
    const api = h.api();
    await api.act('CreateAgent', { name: 'first', definition: { mcpServers: [] } });
    const max = QUOTA_DEFAULTS.agentsPerAccount;
    await fill(h, 'agents', api.principal, max - 1, {
      id: `'agt-fill-' || g || '-' || md5(random()::text)`,
      name: `'fill' || g`,
    });
    expect(await count(h, 'agents', api.principal)).toBe(max);
    const before = await h.settledDigest();
    const events = await h.capture('mcp.events.agent.>');
    const refused = await post(
      h.apiUrl,
      api.envelope({ type: 'CreateAgent', name: 'one-more', definition: { mcpServers: [] } }),
    );
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'quota_exceeded',
      details: { field: 'name', limit: 'agents_per_account', max },
    });
    expect(await h.tableDigest()).toEqual(before);
    await new Promise((r) => setTimeout(r, 100));
    events.stop();
    expect(events.messages).toHaveLength(0);
    await expect(
      h.api().act('CreateAgent', { name: 'one-more', definition: { mcpServers: [] } }),
    ).resolves.toMatchObject({ agent: { name: 'one-more' } });
  });

  it('event streams per account: the 21st is refused while 20 are open, across two instances; closing one frees a slot; another account streams', async () => {
    const api = h.api();
    await api.act('ListAgents');
    const second = await h.addRegistry();
    const max = QUOTA_DEFAULTS.eventStreamsPerAccount;
    const open: Array<{ close: () => void }> = [];
    try {
      for (let i = 0; i < max; i++) {
        const s = await openStream(new ApiClient(i % 2 === 0 ? h.apiUrl : second.url, api.key));
        expect(s.status).toBe(200);
        open.push(s);
      }
      for (const url of [h.apiUrl, second.url]) {
        const refused = await openStream(new ApiClient(url, api.key));
        expect(refused.status).toBe(409);
        expect(refused.body.error).toMatchObject({
          code: 'quota_exceeded',
          details: { field: 'envelope', limit: 'event_streams_per_account', max },
        });
        expect(refused.body.error.details.retryAfterMs).toBeGreaterThan(0);
        expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
      }
      // Another account is unaffected.
      const other = await SseSubscriber.open(h.api());
      await other.close();
      // A closed stream gives its slot back.
      open.pop()?.close();
      const again = await eventually(
        async () => {
          const s = await openStream(new ApiClient(h.apiUrl, api.key));
          if (s.status === 200) return s;
          return undefined;
        },
        10_000,
        'a stream slot freed by a close',
      );
      open.push(again);
    } finally {
      for (const s of open) s.close();
      await second.stop();
    }
  });

  it("an AGENT signer's stream gets only its bound agents' tool changes, no server or approval events; server events carry {kind, server} only", async () => {
    const acct = h.api();
    await acct.act('SetMcpServer', { name: 'up', config: { url: upstream.url } });
    const a1 = (await acct.act('CreateAgent', { name: 'a1', definition: { mcpServers: ['up'] } })).agent.id as string;
    const a2 = (await acct.act('CreateAgent', { name: 'a2', definition: { mcpServers: ['up'] } })).agent.id as string;
    const key = generateKeyPair();
    await acct.act('AuthorizeSigner', { principal: key.principal, role: 'AGENT', agents: ['a1'] });
    const ownerStream = await SseSubscriber.open(acct);
    const agentStream = await SseSubscriber.open(new ApiClient(h.apiUrl, key, acct.principal));
    try {
      await acct.act('UpdateAgent', { agent: 'a1', definition: { mcpServers: [] } });
      await acct.act('UpdateAgent', { agent: 'a2', definition: { mcpServers: [] } });
      await ownerStream.waitFor('agent-tools-changed', (d) => d.agent === a1);
      await ownerStream.waitFor('agent-tools-changed', (d) => d.agent === a2);
      await agentStream.waitFor('agent-tools-changed', (d) => d.agent === a1);
      // A forged discovery claiming a status, and an approval request, straight on the bus.
      h.nc.publish(
        h.subjects.serverDiscovered(acct.principal, 'up'),
        encodePayload({
          account: acct.principal,
          server: 'up',
          serverId: 'x',
          tools: [],
          status: { state: 'ok', error: 'FORGED' },
          toolsChanged: true,
        }),
      );
      const approval: ApprovalRequestedEvent = {
        account: acct.principal,
        approvalId: 'apr_forged',
        agent: a1,
        run: 'r',
        tool: 'up__echo',
        server: 'up',
        remoteName: 'echo',
        argsHash: '0'.repeat(64),
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      };
      h.nc.publish(h.subjects.approvalRequested(acct.principal), encodePayload(approval));
      await h.nc.flush();
      const changed = await ownerStream.waitFor('mcp-servers-changed', (d) => d.server === 'up');
      expect(changed.data).toEqual({ kind: 'discovered', server: 'up' });
      await ownerStream.waitFor('approval-requested', (d) => d.approvalId === 'apr_forged');
      // The owner's stream saw everything the AGENT's could have: anything more there has arrived.
      await new Promise((r) => setTimeout(r, 200));
      expect(agentStream.events.map((e) => e.event)).toEqual(agentStream.events.map(() => 'agent-tools-changed'));
      expect(agentStream.events.every((e) => e.data.agent === a1)).toBe(true);
      expect(ownerStream.raw).not.toContain('FORGED');
    } finally {
      await ownerStream.close();
      await agentStream.close();
    }
  });

  it("a revoked signer's open stream ends at its next heartbeat", async () => {
    const acct = h.api();
    await acct.act('ListAgents');
    const key = generateKeyPair();
    await acct.act('AuthorizeSigner', { principal: key.principal, role: 'WRITER' });
    const envelope = Buffer.from(
      JSON.stringify(new ApiClient(h.apiUrl, key, acct.principal).envelope({ type: 'SubscribeEvents' })),
    ).toString('base64url');
    const abort = new AbortController();
    const res = await fetch(new URL(`/v1/events?envelope=${envelope}`, h.apiUrl), { signal: abort.signal });
    expect(res.status).toBe(200);
    let ended = false;
    const reading = (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) void chunk;
        ended = true;
      } catch {
        // aborted below if it never ended
      }
    })();
    try {
      await acct.act('RevokeSigner', { principal: key.principal });
      await eventually(async () => (ended ? true : undefined), 25_000, 'the revoked signer’s stream to end');
    } finally {
      abort.abort();
      await reading;
    }
  }, 40_000);

  it('actions per signer: a burst past the bucket is refused with 429, rate_limited, retryAfterMs and Retry-After; another signer goes on; later it is admitted', async () => {
    const slow = await h.addRegistry({
      RATE_ACTIONS_PER_SIGNER: SLOW_RATE,
      RATE_ACTIONS_PER_SIGNER_BURST: String(SLOW_BURST),
    });
    try {
      const api = h.api(slow.url);
      // Signed ahead, sent at once. Past the signer's burst but well within the address's (all
      // come from one address, at the default rate), so the signer's limit answers.
      const envelopes: ActionEnvelope[] = Array.from({ length: SLOW_BURST * 4 }, () =>
        api.envelope({ type: 'ListAgents' }),
      );
      const answers = await Promise.all(envelopes.map((e) => post(slow.url, e)));
      const refused = answers.filter((a) => a.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(SLOW_BURST);
      expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true);
      for (const r of refused) {
        expect(r.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 'actions_per_signer' } });
        expect(r.body.error.details.retryAfterMs).toBeGreaterThan(0);
        expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      }
      // Another signer (another account) is not slowed down.
      await expect(h.api(slow.url).act('ListAgents')).resolves.toMatchObject({ agents: [] });
      const wait = Math.max(...refused.map((r) => Number(r.body.error.details.retryAfterMs)));
      await new Promise((r) => setTimeout(r, wait + 50));
      await expect(api.act('ListAgents')).resolves.toMatchObject({ agents: [] });
    } finally {
      await slow.stop();
    }
  }, 30_000);

  it('requests per address: refused before the body is read (a garbage body is 429, not 400, once over); another address is unaffected', async () => {
    const slow = await h.addRegistry({
      RATE_ACTIONS_PER_ADDRESS: SLOW_RATE,
      RATE_ACTIONS_PER_ADDRESS_BURST: String(SLOW_BURST),
    });
    try {
      // From an address of its own (127.0.0.3), so the other tests' bucket (127.0.0.1) is not this one.
      const answers = await Promise.all(
        Array.from({ length: SLOW_BURST * 4 }, () => postFrom('127.0.0.3', slow.url, { not: 'an envelope' })),
      );
      const refused = answers.filter((a) => a.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      expect(answers.every((a) => a.status === 400 || a.status === 429)).toBe(true);
      for (const r of refused) {
        expect(r.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 'actions_per_address' } });
        expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      }
      // A signed action from another address goes through while this one is over its rate.
      const other = h.api(slow.url);
      expect((await postFrom('127.0.0.2', slow.url, other.envelope({ type: 'ListAgents' }))).status).toBe(200);
      // The registry still answers health checks, and this address again once its bucket refills.
      expect((await fetch(new URL('/healthz', slow.url))).status).toBe(200);
      await eventually(
        async () =>
          (await postFrom('127.0.0.3', slow.url, other.envelope({ type: 'ListAgents' }))).status === 200
            ? true
            : undefined,
        20_000,
        'the address admitted again',
      );
    } finally {
      await slow.stop();
    }
  }, 40_000);

  it('every refusal above is counted by kind in mcpx_quota_rejections_total (internal port)', async () => {
    const instance = await h.addRegistry();
    try {
      const text = await (await fetch(new URL('/metrics', instance.internalUrl))).text();
      for (const kind of [
        'servers_per_account',
        'agents_per_account',
        'event_streams_per_account',
        'actions_per_signer',
        'actions_per_address',
      ]) {
        expect(text).toMatch(new RegExp(`mcpx_quota_rejections_total\\{[^}]*kind="${kind}"[^}]*\\} [1-9]`));
      }
    } finally {
      await instance.stop();
    }
  });
});
