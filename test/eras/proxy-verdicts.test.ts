import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload } from '@mcpx/contracts';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { shiftingTools } from '../servers/shifting-tools.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

/** How long a discovery, a projection or a report may take on a busy machine (a wait, not a measure). */
const WAIT_MS = 30_000;

/**
 * The era verdict a proxy's connection had to probe for at its opening (none stored for its auth
 * context, or the stored one no longer works: the server changed era) reaches the registry with
 * the opening's list, and is stored for every instance. The registry, the projector and a proxy in
 * this process, real Postgres and NATS, a modern-only server on loopback.
 */
describe("a proxy's opening probe: its era verdict is stored by the registry", () => {
  let h: RegistryHarness;
  const servers: TestMcpServer[] = [];
  beforeAll(async () => {
    h = await RegistryHarness.start({ proxy: true });
  });
  afterAll(async () => {
    await h?.stop();
    for (const s of servers) await s.close().catch(() => undefined);
  });

  /** The server's stored verdict row. */
  const verdictRow = async (account: string) => {
    const row = await h.sql
      .selectFrom('registry.era_verdicts')
      .selectAll()
      .where('account_id', '=', account)
      .where('server', '=', 'mail')
      .executeTakeFirst();
    return row === undefined
      ? undefined
      : { authContext: row.auth_context, verdict: decodePayload<{ era: string }>(row.verdict_cbor) };
  };

  /** An account with `mail` (a modern-only server) discovered by the registry, its verdict stored, and an agent granted it. */
  const account = async () => {
    const remote = await startTestMcpServer({ era: 'modern', tools: shiftingTools() });
    servers.push(remote);
    const api = h.api();
    await api.act('SetMcpServer', { name: 'mail', config: { url: remote.url } });
    const { agent } = await api.act('CreateAgent', { name: 'bot', definition: { mcpServers: ['mail'] } });
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: agent.id })).tools.length === 2 ? true : undefined),
      WAIT_MS,
      'the tools to be projected',
    );
    const discovered = await eventually(() => verdictRow(api.principal), WAIT_MS, "the registry's verdict");
    expect(discovered.verdict.era).toBe('modern');
    const call = () => api.act('InvokeTool', { agent: agent.id, tool: 'mail__lookup', arguments: { q: 'x' } });
    return { api, call, discovered };
  };

  it('no verdict stored for the auth context: the proxy probes, and the registry stores what it found', async () => {
    const { api, call, discovered } = await account();
    await h.sql.deleteFrom('registry.era_verdicts').where('account_id', '=', api.principal).execute();
    expect(await call()).toMatchObject({ result: { text: 'found x' } });
    const stored = await eventually(() => verdictRow(api.principal), WAIT_MS, "the proxy's verdict stored");
    expect(stored).toEqual(discovered);
  });

  it('the stored verdict no longer works (it says legacy; the server speaks the modern era only): the proxy re-probes, and the registry stores the new verdict', async () => {
    const { api, call, discovered } = await account();
    await h.sql
      .updateTable('registry.era_verdicts')
      .set({ verdict_cbor: encodePayload({ era: 'legacy', protocolVersion: '2025-06-18', transport: 'http' }) })
      .where('account_id', '=', api.principal)
      .execute();
    expect(await call()).toMatchObject({ result: { text: 'found x' } });
    const stored = await eventually(
      async () => {
        const row = await verdictRow(api.principal);
        return row?.verdict.era === 'modern' ? row : undefined;
      },
      WAIT_MS,
      "the proxy's new verdict stored",
    );
    expect(stored).toEqual(discovered);
  });
});
