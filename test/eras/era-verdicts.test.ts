import { describe, expect, it } from 'vitest';
import { decodePayload, encodePayload, type ToolsObserved } from '@mcpx/contracts';
import type { TestMcpServer, TestTool } from '../servers/index.js';
import type { RegistryHarness } from '../support/registry-harness.js';
import { eraServersPerSuite } from './era-servers.js';
import { eventually } from '../support/system.js';
import { sendJson, sendResult, startHandWritten } from '../support/fixtures/hand-written-mcp.js';
import { firstProjectedToolNames } from '../support/fixtures/agents.js';

/** A server that answers server/discover with a result that lies (versions that are no versions) and 400 to anything else. */
async function startLyingServer(): Promise<{ url: string; requests: number; close(): Promise<void> }> {
  const state = { requests: 0 };
  const s = await startHandWritten((msg, res) => {
    state.requests++;
    if (msg.method === 'server/discover')
      return sendResult(res, msg.id, {
        supportedVersions: ['tomorrow', 42],
        capabilities: 'all of them',
        serverInfo: { name: 'liar', version: '1' },
      });
    sendJson(res, 400, { jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32600, message: 'no' } });
  });
  return {
    url: s.url,
    get requests() {
      return state.requests;
    },
    close: s.close,
  };
}

/** The stored verdict row of a server (the registry's own data). */
async function verdictRow(
  h: RegistryHarness,
  account: string,
  server: string,
): Promise<{ authContext: string; verdict: any; raw: Uint8Array } | undefined> {
  const row = await h.sql
    .selectFrom('registry.era_verdicts')
    .selectAll()
    .where('account_id', '=', account)
    .where('server', '=', server)
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : { authContext: row.auth_context, verdict: decodePayload(row.verdict_cbor), raw: row.verdict_cbor };
}

/** Change streams the registry has opened so far (`mcpx_registry_listen_events_total`, event `opened`). */
async function streamsOpened(h: RegistryHarness): Promise<number> {
  const text = await (await fetch(`${h.internalUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('mcpx_registry_listen_events_total{') && l.includes('event="opened"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A tool whose x-mcp-header annotation is invalid: the header would ride on an object property. */
const badHeaderTool: TestTool = {
  name: 'badheader',
  inputSchema: { type: 'object', properties: { region: { type: 'object', 'x-mcp-header': 'Region' } } },
  handler: async () => ({ content: [{ type: 'text', text: 'never' }] }),
};

/** Era verdicts: probed once by the first discovery, keyed by server and auth context, reused with no round trip. */
describe('era verdicts in the registry', () => {
  let h: RegistryHarness;
  let modern: TestMcpServer;
  let legacy: TestMcpServer;

  eraServersPerSuite((started) => ({ h, modern, legacy } = started), [badHeaderTool]);

  it('a modern server: the first discovery probes once; every later one connects with the verdict, zero discovers and zero handshakes', async () => {
    const api = h.api();
    const secret = 'Bearer era-secret-token-0001';
    const { server } = await api.act('SetMcpServer', {
      name: 'modern',
      config: { url: modern.url, headers: {}, secretHeaders: { Authorization: secret } },
    });
    expect(server.status).toMatchObject({ state: 'ok', era: 'modern', protocolVersion: '2026-07-28' });
    expect(server).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
    expect(modern.stats.discovers).toBe(1);
    expect(modern.stats.handshakes).toBe(0);

    const row = await verdictRow(h, api.principal, 'modern');
    expect(row?.verdict).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
    expect(row?.authContext).toMatch(/^[0-9a-f]{64}$/);
    // The auth context is a hash: neither it nor the stored verdict carries the credential.
    expect(row?.authContext).not.toContain('era-secret');
    expect(Buffer.from(row!.raw).toString('latin1')).not.toContain('era-secret');

    for (let i = 0; i < 3; i++) {
      const again = (await api.act('RefreshMcpServer', { name: 'modern' })).server;
      expect(again.status.state).toBe('ok');
    }
    expect(modern.stats.discovers).toBe(1);
    expect(modern.stats.handshakes).toBe(0);
    expect(modern.stats.listCalls).toBeGreaterThanOrEqual(4);
  });

  it('another auth context never reuses the verdict: a changed credential probes again and replaces it', async () => {
    const api = h.api();
    await api.act('SetMcpServer', {
      name: 'ctx',
      config: { url: modern.url, secretHeaders: { Authorization: 'Bearer first-credential-aaaa' } },
    });
    const first = await verdictRow(h, api.principal, 'ctx');
    const before = modern.stats.discovers;
    const { server } = await api.act('SetMcpServer', {
      name: 'ctx',
      config: { url: modern.url, secretHeaders: { Authorization: 'Bearer second-credential-bbbb' } },
    });
    expect(server.status.state).toBe('ok');
    expect(modern.stats.discovers - before).toBe(1);
    const second = await verdictRow(h, api.principal, 'ctx');
    expect(second?.authContext).not.toBe(first?.authContext);
    // The same URL and credential under another account is another context too.
    const other = h.api();
    const b = modern.stats.discovers;
    await other.act('SetMcpServer', {
      name: 'ctx',
      config: { url: modern.url, secretHeaders: { Authorization: 'Bearer second-credential-bbbb' } },
    });
    expect(modern.stats.discovers - b).toBe(1);
  });

  it('a legacy server: the verdict sends later discoveries straight to initialize (no server/discover again)', async () => {
    const api = h.api();
    const { server } = await api.act('SetMcpServer', { name: 'legacy', config: { url: legacy.url } });
    expect(server).toMatchObject({ era: 'legacy', status: { state: 'ok', era: 'legacy', transport: 'http' } });
    expect(server.protocolVersion).toMatch(/^2025-/);
    expect((await verdictRow(h, api.principal, 'legacy'))?.verdict).toMatchObject({ era: 'legacy', transport: 'http' });
    const discovers = legacy.stats.discovers;
    const handshakes = legacy.stats.handshakes;
    await api.act('RefreshMcpServer', { name: 'legacy' });
    await api.act('RefreshMcpServer', { name: 'legacy' });
    expect(legacy.stats.discovers).toBe(discovers);
    expect(legacy.stats.handshakes - handshakes).toBe(2);
  });

  it('a verdict that stops working is re-probed once and stored anew', async () => {
    const api = h.api();
    const opened = await streamsOpened(h);
    await api.act('SetMcpServer', { name: 'stale', config: { url: modern.url } });
    // The set's discovery gives the server a change stream, opened in the background on the
    // stored verdict: opened after the lie below, it would re-probe too (a second server/discover
    // at the server, not the refresh's). The lie is written once the stream is open.
    await eventually(
      async () => ((await streamsOpened(h)) > opened ? true : undefined),
      15_000,
      "the server's change stream open",
    );
    // The server "was" legacy when probed: the stored verdict now lies about it.
    const lie = encodePayload({ era: 'legacy', protocolVersion: '2025-11-25', transport: 'http' });
    await h.sql
      .updateTable('registry.era_verdicts')
      .set({ verdict_cbor: lie })
      .where('account_id', '=', api.principal)
      .where('server', '=', 'stale')
      .execute();
    const before = modern.stats.discovers;
    const { server } = await api.act('RefreshMcpServer', { name: 'stale' });
    expect(server.status).toMatchObject({ state: 'ok', era: 'modern' });
    expect(modern.stats.discovers - before).toBe(1);
    expect((await verdictRow(h, api.principal, 'stale'))?.verdict).toMatchObject({ era: 'modern' });
    // Stored again: the next discovery needs no probe.
    await api.act('RefreshMcpServer', { name: 'stale' });
    expect(modern.stats.discovers - before).toBe(1);
  });

  it('a tool with an invalid x-mcp-header annotation is not projected, and the status names it and why', async () => {
    const api = h.api();
    const { server } = await api.act('SetMcpServer', { name: 'hdr', config: { url: modern.url } });
    expect(server.tools.map((t: { name: string }) => t.name)).toEqual(['echo']);
    expect(server.status.skippedTools).toHaveLength(1);
    expect(server.status.skippedTools[0]).toMatchObject({ name: 'badheader' });
    expect(server.status.skippedTools[0].reason).toMatch(/x-mcp-header/);
    const { agent } = await api.act('CreateAgent', { name: 'hdr-agent', definition: { mcpServers: ['hdr'] } });
    expect(await firstProjectedToolNames(api, agent.id)).toEqual(['hdr__echo']);
    const listed = (await api.act('ListMcpServers', {})).servers.find((s: { name: string }) => s.name === 'hdr');
    expect(listed).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
  });

  it('a server whose server/discover result lies gets a typed error in its status, no verdict, and the registry goes on', async () => {
    const liar = await startLyingServer();
    try {
      const api = h.api();
      const { server } = await api.act('SetMcpServer', { name: 'liar', config: { url: liar.url } });
      expect(server.status.state).toBe('error');
      expect(server.status.error).toMatch(/era cannot be trusted: supportedVersions/);
      expect(server.era).toBeUndefined();
      expect(await verdictRow(h, api.principal, 'liar')).toBeUndefined();
      // Bounded: a handful of requests, not a loop.
      expect(liar.requests).toBeLessThanOrEqual(6);
      expect((await api.act('SetMcpServer', { name: 'fine', config: { url: modern.url } })).server.status.state).toBe(
        'ok',
      );
    } finally {
      await liar.close();
    }
  });

  it("a proxy's probed verdict on tools-observed is stored; a malformed one is dropped with nothing written", async () => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'obs', config: { url: legacy.url } });
    const before = await verdictRow(h, api.principal, 'obs');
    const publish = (extra: Partial<ToolsObserved>): void => {
      const msg: ToolsObserved = {
        account: api.principal,
        server: 'obs',
        tools: [{ name: 'echo', inputSchema: { type: 'object' } }],
        transport: 'http',
        ...extra,
      };
      h.nc.publish(h.subjects.toolsObserved, encodePayload(msg));
    };
    // Garbage: a verdict of no known era, an oversized one, a context that is no hash.
    publish({ verdict: { era: 'future', protocolVersion: 'x' }, authContext: 'a'.repeat(64) });
    publish({
      verdict: { era: 'modern', protocolVersion: '2026-07-28', discover: { pad: 'x'.repeat(200_000) } },
      authContext: 'b'.repeat(64),
    });
    publish({ verdict: { era: 'legacy', protocolVersion: '2025-06-18', transport: 'sse' }, authContext: 'not a hash' });
    const ctx = 'c'.repeat(64);
    publish({ verdict: { era: 'legacy', protocolVersion: '2025-06-18', transport: 'sse' }, authContext: ctx });
    const stored = await eventually(
      async () => {
        const row = await verdictRow(h, api.principal, 'obs');
        return row?.authContext === ctx ? row : undefined;
      },
      10_000,
      'the reported verdict stored',
    );
    expect(stored.verdict).toEqual({ era: 'legacy', protocolVersion: '2025-06-18', transport: 'sse' });
    expect(before?.authContext).not.toBe(ctx);
  });
});
