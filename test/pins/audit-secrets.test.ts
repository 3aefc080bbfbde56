import { generateKeyPairSync } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { type TestMcpServer } from '../servers/index.js';
import { shiftingTools, ToolShifts } from '../servers/shifting-tools.js';
import type { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import type { RegistryHarness } from '../support/registry-harness.js';
import { registryAndServerPerSuite } from '../support/fixtures/suites.js';

/**
 * Attacks on the audit log and the reviews against the real registry (real Postgres, NATS, a real
 * server on loopback): every place a server's config carries a secret (a bearer token, secret
 * header values, a key in the URL's query, an OAuth client's secret and private key) set, changed
 * and deleted, and none of it in ListAuditEvents or in the table's rows; another account cannot
 * see, accept or reject a held change, nor read the log.
 */
describe('the audit log never holds a secret; reviews are the account’s own', () => {
  let h: RegistryHarness;
  let remote: TestMcpServer;
  registryAndServerPerSuite(shiftingTools, (started, server) => {
    h = started;
    remote = server;
  });

  const rowsOf = async (api: ApiClient): Promise<string> =>
    (
      await sql<{
        j: string;
      }>`SELECT row_to_json(a)::text AS j FROM registry.audit_events a WHERE account_id = ${api.principal}`.execute(
        h.sql,
      )
    ).rows
      .map((r) => r.j)
      .join('\n');

  it('secrets set, changed and deleted in every field that carries one are in no entry', async () => {
    const api = h.api();
    const secrets = {
      token: 'sk-bearer-token-0a1b2c3d4e5f',
      header: 'hdr-secret-value-9f8e7d6c5b4a',
      query: 'query-key-value-1122334455',
      clientSecret: 'oauth-client-secret-66778899',
      rotated: 'sk-rotated-token-ffeeddccbbaa',
    };
    const url = `${remote.url}?api_key=${secrets.query}`;
    await api.act('SetMcpServer', { name: 'a', config: { url, pin: 'review', auth: 'bearer', token: secrets.token } });
    await api.act('SetMcpServer', { name: 'a', config: { url, auth: 'bearer', token: secrets.rotated } });
    await api.act('SetMcpServer', {
      name: 'b',
      config: {
        url: remote.url,
        auth: 'headers',
        headers: { 'X-Plain': 'plain' },
        secretHeaders: { 'X-Api-Key': secrets.header },
      },
    });
    // A machine client's private key (a real one, as the registry checks it on SetMcpServer).
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const keyBody = pem.split('\n')[2]!;
    await api.act('SetMcpServer', {
      name: 'c',
      config: {
        url: remote.url,
        auth: 'oauth',
        oauth: { clientId: 'ci-1', grant: 'client_credentials', privateKey: pem, keyAlg: 'ES256' },
      },
    });
    await api.act('SetMcpServer', {
      name: 'c2',
      config: { url: remote.url, auth: 'oauth', oauth: { clientId: 'ci-2', clientSecret: secrets.clientSecret } },
    });
    for (const name of ['a', 'b']) await api.act('DeleteMcpServer', { name });

    const events = (await api.act('ListAuditEvents', { limit: 200 })).events as Array<{
      action: string;
      target: { name: string };
      after?: Record<string, unknown>;
    }>;
    expect(events.filter((e) => e.action === 'SetMcpServer').length).toBeGreaterThanOrEqual(3);
    // What the entries do keep: names, never values.
    expect(events.find((e) => e.action === 'SetMcpServer' && e.target.name === 'b')?.after).toMatchObject({
      secretHeaderNames: expect.arrayContaining(['X-Api-Key']),
      auth: 'headers',
    });
    // The OAuth servers were saved (their secrets sealed), so their entries are there to be searched.
    expect(
      events
        .filter((e) => e.action === 'SetMcpServer' && e.target.name.startsWith('c'))
        .map((e) => e.target.name)
        .sort(),
    ).toEqual(['c', 'c2']);
    const url0 = events.find((e) => e.action === 'SetMcpServer' && e.target.name === 'a')?.after?.url as string;
    expect(url0).not.toContain('api_key=');
    const listed = JSON.stringify(events);
    const stored = await rowsOf(api);
    for (const [what, value] of Object.entries({ ...secrets, keyBody })) {
      expect(listed, what).not.toContain(value);
      expect(stored, what).not.toContain(value);
    }
  });

  it('another account cannot list, accept or reject a held change, nor read the log', async () => {
    const owner = h.api();
    const stranger = h.api();
    remote.setTools(shiftingTools());
    await owner.act('SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'review' } });
    remote.setTools(ToolShifts.schema());
    await owner.act('RefreshMcpServer', { name: 'mail' });
    const [change] = (await owner.act('ListToolChanges')).changes as Array<{ tool: string; cid: string }>;
    expect(change).toBeDefined();
    expect((await stranger.act('ListToolChanges')).changes).toEqual([]);
    // The stranger's own account has no server of that name: not_found, whatever the CID.
    await expect(
      stranger.act('AcceptToolChange', { server: 'mail', tool: change!.tool, cid: change!.cid }),
    ).rejects.toMatchObject({ code: 'not_found', details: { field: 'server' } });
    await expect(
      stranger.act('RejectToolChange', { server: 'mail', tool: change!.tool, cid: change!.cid }),
    ).rejects.toMatchObject({ code: 'not_found', details: { field: 'server' } });
    // Even with a server of the same name and URL of its own, the owner's change is not its to decide.
    await stranger.act('SetMcpServer', { name: 'mail', config: { url: remote.url, pin: 'review' } });
    await expect(
      stranger.act('AcceptToolChange', { server: 'mail', tool: change!.tool, cid: change!.cid }),
    ).rejects.toMatchObject({ details: { field: expect.stringMatching(/^(tool|cid)$/) } });
    expect((await owner.act('ListToolChanges')).changes).toEqual([
      expect.objectContaining({ tool: change!.tool, cid: change!.cid, status: 'pending' }),
    ]);
    expect(
      ((await stranger.act('ListAuditEvents', { limit: 200 })).events as Array<{ target: { name: string } }>).every(
        (e) => e.target.name === 'mail',
      ),
    ).toBe(true);
    expect(JSON.stringify((await stranger.act('ListAuditEvents', { action: 'ToolChangeHeld' })).events)).not.toContain(
      change!.cid,
    );
  });
  it('ListAuditEvents filters by signer, time and target, pages with its cursor, and mcpx audit passes each filter on', async () => {
    const api = h.api();
    remote.setTools(shiftingTools());
    const start = new Date(Date.now() - 1_000).toISOString();
    await api.act('SetMcpServer', { name: 'f1', config: { url: remote.url, pin: 'review' } });
    await api.act('SetMcpServer', { name: 'f2', config: { url: remote.url } });
    type Entry = { action: string; signer: string; target: { kind: string; name: string } };
    const list = (f: Record<string, unknown>) =>
      api.act<{ events: Entry[]; nextCursor?: string }>('ListAuditEvents', f);
    // The pin's baseline is the registry's; the servers were set by the owner.
    expect((await list({ signer: 'registry' })).events.map((e) => e.action)).toEqual(['PinBaseline']);
    expect((await list({ signer: api.principal })).events.map((e) => e.target.name)).toEqual(['f2', 'f1']);
    expect((await list({ target: 'f2' })).events.map((e) => e.action)).toEqual(['SetMcpServer']);
    expect((await list({ since: start })).events).toHaveLength(3);
    expect((await list({ since: new Date(Date.now() + 60_000).toISOString() })).events).toEqual([]);
    expect((await list({ until: start })).events).toEqual([]);
    const first = await list({ limit: 2 });
    expect(first.events).toHaveLength(2);
    const rest = await list({ limit: 2, cursor: first.nextCursor });
    expect(rest.events.map((e) => e.target.name)).toEqual(['f1']);
    expect(rest.nextCursor).toBeUndefined();
    const { env } = cliEnvFor(api);
    const cli = await runCli(
      ['audit', '--signer', 'registry', '--kind', 'server', '--target', 'f1', '--since', start, '--json'],
      env,
    );
    expect(cli.code).toBe(0);
    expect((JSON.parse(cli.stdout) as { events: Entry[] }).events.map((e) => [e.action, e.target.name])).toEqual([
      ['PinBaseline', 'f1'],
    ]);
  });
});
