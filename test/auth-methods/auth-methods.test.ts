import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { storedSecretNames } from '../support/fixtures/stored-secrets.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

const set = (api: ApiClient, name: string, config: Record<string, unknown>): Promise<{ server: RedactedMcpServer }> =>
  api.act('SetMcpServer', { name, config });

/** Calls `<server>__echo` through the proxy (InvokeTool) once the agent holds it. */
async function echoThrough(api: ApiClient, server: string): Promise<string> {
  const agent = `a-${server}`;
  await api.act('CreateAgent', { name: agent, definition: { mcpServers: [server] } });
  await eventually(async () =>
    (await api.act('ListAgentTools', { agent })).tools.some((t: { name: string }) => t.name === `${server}__echo`)
      ? true
      : undefined,
  );
  const { result } = await api.act('InvokeTool', { agent, tool: `${server}__echo`, arguments: { text: 'hi' } });
  return result.text as string;
}

/** The values of a header the upstream received since `from` (its lowercased name). */
const seen = (up: TestMcpServer, header: string): string[] => up.stats.headersSeen.get(header) ?? [];

/** Three servers of one era: one behind a bearer token, one behind a custom header, one open. */
async function startUpstreams(
  era: 'modern' | 'legacy',
): Promise<{ bearerUp: TestMcpServer; headersUp: TestMcpServer; openUp: TestMcpServer }> {
  const [bearerUp, headersUp, openUp] = await Promise.all([
    startTestMcpServer({ era, requireHeader: { name: 'Authorization', value: 'Bearer tok-AbC123' } }),
    startTestMcpServer({ era, requireHeader: { name: 'X-Acme-Token', value: 'abc123' } }),
    startTestMcpServer({ era }),
  ]);
  return { bearerUp, headersUp, openUp };
}

/** One registry, projector and proxy for the file; the credential flows run against servers of both eras. */
describe('auth methods (docs/servers.md#auth-methods): oauth, bearer, headers, none', () => {
  let h: RegistryHarness;
  let bearerUp: TestMcpServer;
  let openUp: TestMcpServer;
  let headersUp: TestMcpServer;

  beforeAll(async () => {
    let ups: Awaited<ReturnType<typeof startUpstreams>>;
    [h, ups] = await Promise.all([RegistryHarness.start({ proxy: true }), startUpstreams('legacy')]);
    ({ bearerUp, headersUp, openUp } = ups);
  });
  afterAll(async () => {
    await h?.stop();
    await Promise.all([bearerUp?.close(), headersUp?.close(), openUp?.close()]);
  });

  describe.each(['modern', 'legacy'] as const)('against %s servers', (era) => {
    let bearerUp: TestMcpServer;
    let headersUp: TestMcpServer;
    let openUp: TestMcpServer;
    beforeAll(async () => {
      ({ bearerUp, headersUp, openUp } = await startUpstreams(era));
    });
    afterAll(async () => {
      await Promise.all([bearerUp?.close(), headersUp?.close(), openUp?.close()]);
    });

    it('bearer: the token is sealed, sent as Authorization: Bearer, never shown, kept on an update without it', async () => {
      const api = h.api();
      const { server } = await set(api, 'bear', { url: bearerUp.url, auth: 'bearer', token: 'tok-AbC123' });
      expect(server).toMatchObject({
        auth: 'bearer',
        hasSecrets: true,
        headerNames: [],
        secretHeaderNames: ['Authorization'],
        status: { state: 'ok' },
      });
      expect(JSON.stringify(await api.act('ListMcpServers'))).not.toContain('tok-AbC123');
      const rows = await h.sql
        .selectFrom('registry.secrets')
        .selectAll()
        .where('account_id', '=', api.principal)
        .execute();
      expect(rows.map((r) => r.name)).toEqual(['mcp-bear-authorization']);
      expect(Buffer.from(rows[0]!.ciphertext).toString('latin1')).not.toContain('tok-AbC123');
      expect(await echoThrough(api, 'bear')).toBe('echo: hi');
      expect(new Set(seen(bearerUp, 'authorization'))).toEqual(new Set(['Bearer tok-AbC123']));
      // An update without the token keeps it; a wrong one is refused upstream (a plain 401: an error).
      expect((await set(api, 'bear', { url: bearerUp.url, auth: 'bearer' })).server.status.state).toBe('ok');
      expect((await set(api, 'bear', { url: bearerUp.url, auth: 'bearer', token: 'wrong' })).server.status.state).toBe(
        'error',
      );
    });

    it('headers: every custom header is stored encrypted and sent as given', async () => {
      const api = h.api();
      const { server } = await set(api, 'acme', {
        url: headersUp.url,
        auth: 'headers',
        headers: { 'X-Acme-Token': 'abc123', 'X-Tenant': 'acme' },
      });
      expect(server).toMatchObject({ auth: 'headers', hasSecrets: true, headerNames: [], status: { state: 'ok' } });
      expect(server.secretHeaderNames.sort()).toEqual(['X-Acme-Token', 'X-Tenant']);
      expect(await storedSecretNames(h.sql, api.principal)).toEqual(['mcp-acme-x-acme-token', 'mcp-acme-x-tenant']);
      expect(await echoThrough(api, 'acme')).toBe('echo: hi');
      expect(seen(headersUp, 'x-tenant')).toContain('acme');
      expect(seen(headersUp, 'authorization')).toEqual([]);
    });

    it('absent auth keeps older configs valid: static headers in the clear read as headers, none as none', async () => {
      const api = h.api();
      const legacy = (await set(api, 'legacy', { url: headersUp.url, headers: { 'X-Acme-Token': 'abc123' } })).server;
      expect(legacy).toMatchObject({
        auth: 'headers',
        headerNames: ['X-Acme-Token'],
        secretHeaderNames: [],
        hasSecrets: false,
        status: { state: 'ok' },
      });
      expect((await set(api, 'plain', { url: openUp.url })).server).toMatchObject({ auth: 'none', hasSecrets: false });
    });

    it('none: sends no credential at all, and switching to none drops the stored secrets', async () => {
      const api = h.api();
      await set(api, 'open', { url: openUp.url, auth: 'bearer', token: 'tok-xyz' });
      const { server } = await set(api, 'open', { url: openUp.url, auth: 'none' });
      expect(server).toMatchObject({ auth: 'none', hasSecrets: false, headerNames: [], secretHeaderNames: [] });
      expect(await storedSecretNames(h.sql, api.principal)).toEqual([]);
      const before = openUp.stats.calls;
      const sizeBefore = seen(openUp, 'authorization').length;
      expect(await echoThrough(api, 'open')).toBe('echo: hi');
      expect(openUp.stats.calls).toBe(before + 1);
      // Only the first set (bearer) sent a credential; none of the later requests did.
      expect(seen(openUp, 'authorization').length).toBe(sizeBefore);
    });
  });

  it('oauth stays as it was (a server without OAuth metadata just connects)', async () => {
    const api = h.api();
    expect((await set(api, 'oa', { url: openUp.url, auth: 'oauth' })).server).toMatchObject({
      auth: 'oauth',
      status: { state: 'ok' },
    });
  });

  it('refuses mismatched inputs by field, writing nothing', async () => {
    const api = h.api();
    await set(api, 'keep', { url: openUp.url });
    // Its projection is written asynchronously: let it land before taking the digest.
    await eventually(() =>
      h.sql
        .selectFrom('projector.projected_servers')
        .select('server')
        .where('account_id', '=', api.principal)
        .where('server', '=', 'keep')
        .executeTakeFirst(),
    );
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ url: openUp.url, token: 't' }, 'config.token'],
      [{ url: openUp.url, auth: 'headers', headers: { 'X-A': '1' }, token: 't' }, 'config.token'],
      [{ url: openUp.url, auth: 'oauth', token: 't' }, 'config.token'],
      [{ url: openUp.url, auth: 'none', headers: { 'X-A': '1' } }, 'config.headers.X-A'],
      [{ url: openUp.url, auth: 'none', secretHeaders: { 'X-B': '1' } }, 'config.secretHeaders.X-B'],
      [
        { url: openUp.url, auth: 'bearer', token: 't', secretHeaders: { authorization: 'Bearer x' } },
        'config.secretHeaders.authorization',
      ],
      [{ url: openUp.url, auth: 'bearer' }, 'config.token'],
      [{ url: openUp.url, auth: 'bearer', token: 'has space' }, 'config.token'],
      [{ url: openUp.url, auth: 'bearer', token: 42 }, 'config.token'],
      [{ url: openUp.url, auth: 'magic' }, 'config.auth'],
    ];
    // This account's rows: the file's other servers are re-probed in the background.
    const before = await h.settledDigest(api.principal);
    for (const [config, field] of cases) {
      for (const name of ['keep', 'fresh']) {
        const err = await set(api, name, config).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, `${name} ${JSON.stringify(config)}`).toMatchObject({ code: 'invalid_input', details: { field } });
        expect(JSON.stringify(err)).not.toContain('has space');
      }
    }
    expect(await h.tableDigest(api.principal)).toEqual(before);
  });

  it('CLI: mcpx servers set NAME URL --auth bearer --token T, and --auth none', async () => {
    const api = h.api();
    const { env } = cliEnvFor(api);
    const bearer = await runCli(
      ['servers', 'set', 'clibear', bearerUp.url, '--auth', 'bearer', '--token', 'tok-AbC123', '--json'],
      env,
    );
    expect(bearer.code, bearer.stderr).toBe(0);
    expect(JSON.parse(bearer.stdout)).toMatchObject({
      name: 'clibear',
      auth: 'bearer',
      hasSecrets: true,
      status: { state: 'ok' },
    });
    expect(bearer.stdout).not.toContain('tok-AbC123');
    const none = await runCli(['servers', 'set', 'clinone', openUp.url, '--auth', 'none', '--header', 'X-A=1'], env);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('config.headers.X-A');
    const bad = await runCli(['servers', 'set', 'clibad', openUp.url, '--auth', 'magic'], env);
    expect(bad.code).not.toBe(0);
  });
});
