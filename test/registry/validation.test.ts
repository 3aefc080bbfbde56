import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodePayload } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

interface Answer {
  status: number;
  body: any;
}

interface Row {
  what: string;
  send: () => Promise<Answer>;
  status: number;
  code: string;
  /** The field `details.field` must name (and the message must start with). */
  field: string;
}

/**
 * Bad input, table-driven: every invalid action is a typed error with a stable code naming its
 * field and the right HTTP status, and nothing is written — no row in any table changes and no
 * message is published on NATS.
 */
describe('invalid actions: a typed error naming the field, nothing written', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  let api: ApiClient;
  let agentSigner: ApiClient;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([RegistryHarness.start(), startTestMcpServer()]);
    api = h.api();
    // The account exists, with a server, an agent, a secret and an AGENT signer.
    await api.act('SetMcpServer', {
      name: 'demo',
      config: { url: upstream.url, secretHeaders: { 'X-Key': 'v-1234' } },
    });
    await api.act('CreateAgent', { name: 'helper', definition: { mcpServers: ['demo'] } });
    const agentKey = generateKeyPair();
    await api.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['helper'] });
    agentSigner = new ApiClient(h.apiUrl, agentKey, api.principal);
    // The projection of the agent settles before any row is measured.
    await eventually(
      async () => ((await api.act('ListAgentTools', { agent: 'helper' })).tools.length === 2 ? true : undefined),
      15_000,
      'projection',
    );
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  const act = (type: string, fields: Record<string, unknown> = {}): Promise<Answer> =>
    api.raw(api.envelope({ type, ...fields }));
  const set = (name: unknown, config: unknown): Promise<Answer> => act('SetMcpServer', { name, config });
  const url = (): string => upstream.url;
  const headers = (n: number): Record<string, string> =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));
  const cbor = async (body: Uint8Array): Promise<Answer> => {
    const res = await fetch(new URL('/v1/actions', h.apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/cbor' },
      body,
    });
    return { status: res.status, body: decodePayload(new Uint8Array(await res.arrayBuffer())) };
  };
  const sixteenPlusOne = Array.from({ length: 17 }, (_, i) => `s${i}`);

  const rows: Row[] = [
    // server names
    {
      what: 'name with __',
      send: () => set('a__b', { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    {
      what: 'uppercase name',
      send: () => set('GitHub', { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    {
      what: '33-character name',
      send: () => set('a'.repeat(33), { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    { what: 'empty name', send: () => set('', { url: url() }), status: 400, code: 'invalid_input', field: 'name' },
    {
      what: 'name starting with -',
      send: () => set('-x', { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    {
      what: 'name with a dot',
      send: () => set('a.b', { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    // Names that would split or wildcard a NATS subject (mcp.notices.<acct>.<server>,
    // mcp.events.server.*.<acct>.<server>) if they reached one: refused before anything is written.
    ...['*', '>', 'a*', 'a>', 'a b', 'a\tb', 'a\nb', 'db.>', 'other.*'].map((name): Row => ({
      what: `name ${JSON.stringify(name)} (a subject wildcard, separator or whitespace)`,
      send: () => set(name, { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    })),
    {
      what: 'name not a string',
      send: () => set(42, { url: url() }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    // URLs
    {
      what: 'ftp URL',
      send: () => set('s', { url: 'ftp://example.com/mcp' }),
      status: 400,
      code: 'invalid_input',
      field: 'config.url',
    },
    {
      what: 'URL without a host',
      send: () => set('s', { url: 'http://' }),
      status: 400,
      code: 'invalid_input',
      field: 'config.url',
    },
    {
      what: 'URL over 2048 bytes',
      send: () => set('s', { url: `https://example.com/${'a'.repeat(2040)}` }),
      status: 400,
      code: 'invalid_input',
      field: 'config.url',
    },
    {
      what: 'URL with credentials',
      send: () => set('s', { url: 'https://user:pw@example.com/mcp' }),
      status: 400,
      code: 'invalid_input',
      field: 'config.url',
    },
    {
      what: 'URL that is not a URL',
      send: () => set('s', { url: 'not a url' }),
      status: 400,
      code: 'invalid_input',
      field: 'config.url',
    },
    { what: 'missing URL', send: () => set('s', {}), status: 400, code: 'invalid_input', field: 'config.url' },
    {
      what: 'config not an object',
      send: () => set('s', 'https://example.com'),
      status: 400,
      code: 'invalid_input',
      field: 'config',
    },
    {
      what: 'unknown config field',
      send: () => set('s', { url: url(), oauth: true }),
      status: 400,
      code: 'invalid_input',
      field: 'config.oauth',
    },
    {
      what: 'unknown auth method',
      send: () => set('s', { url: url(), auth: 'magic' }),
      status: 400,
      code: 'invalid_input',
      field: 'config.auth',
    },
    {
      what: 'unknown transport',
      send: () => set('s', { url: url(), transport: 'websocket' }),
      status: 400,
      code: 'invalid_input',
      field: 'config.transport',
    },
    // headers
    {
      what: 'header name with a space',
      send: () => set('s', { url: url(), headers: { 'Bad Name': 'v' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.Bad Name',
    },
    {
      what: 'header name with _',
      send: () => set('s', { url: url(), headers: { X_Under: 'v' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.X_Under',
    },
    {
      what: 'header name with :',
      send: () => set('s', { url: url(), secretHeaders: { 'X:Y': 'v' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.secretHeaders.X:Y',
    },
    {
      what: '17 headers',
      send: () => set('s', { url: url(), headers: headers(17) }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers',
    },
    {
      what: '17 headers across static and secret',
      send: () =>
        set('s', {
          url: url(),
          headers: headers(10),
          secretHeaders: Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`X-S${i}`, 'v'])),
        }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers',
    },
    {
      what: 'header value over 4 KiB',
      send: () => set('s', { url: url(), headers: { 'X-Big': 'v'.repeat(4097) } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.X-Big',
    },
    {
      what: 'secret header value over 4 KiB',
      send: () => set('s', { url: url(), secretHeaders: { Authorization: 'v'.repeat(4097) } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.secretHeaders.Authorization',
    },
    {
      what: 'header value with CRLF',
      send: () => set('s', { url: url(), headers: { 'X-A': 'a\r\nInjected: 1' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.X-A',
    },
    {
      what: 'header value with LF',
      send: () => set('s', { url: url(), headers: { 'X-A': 'a\nb' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.X-A',
    },
    {
      what: 'secret header value with CR',
      send: () => set('s', { url: url(), secretHeaders: { Authorization: 'Bearer x\ry' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.secretHeaders.Authorization',
    },
    {
      what: 'header value not a string',
      send: () => set('s', { url: url(), headers: { 'X-A': 1 } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.X-A',
    },
    {
      what: 'headers not an object',
      send: () => set('s', { url: url(), headers: ['X-A: 1'] }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers',
    },
    {
      what: 'a header the transport owns',
      send: () => set('s', { url: url(), headers: { 'Content-Type': 'text/plain' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.headers.Content-Type',
    },
    // secretRefs
    {
      what: 'secretRefs naming a missing secret',
      send: () => set('s', { url: url(), secretRefs: { Authorization: 'no-such-secret' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.secretRefs.Authorization',
    },
    {
      what: 'secretRefs with a malformed name',
      send: () => set('s', { url: url(), secretRefs: { Authorization: '../x' } }),
      status: 400,
      code: 'invalid_input',
      field: 'config.secretRefs.Authorization',
    },
    // grants
    {
      what: '17 grants',
      send: () => act('CreateAgent', { name: 'a2', definition: { mcpServers: sixteenPlusOne } }),
      status: 400,
      code: 'invalid_input',
      field: 'definition.mcpServers',
    },
    {
      what: 'grant of an unknown server',
      send: () => act('CreateAgent', { name: 'a2', definition: { mcpServers: ['demo', 'nope'] } }),
      status: 400,
      code: 'invalid_input',
      field: 'definition.mcpServers[1]',
    },
    {
      what: 'grants not an array',
      send: () => act('CreateAgent', { name: 'a2', definition: { mcpServers: 'demo' } }),
      status: 400,
      code: 'invalid_input',
      field: 'definition.mcpServers',
    },
    {
      what: 'grant not a string',
      send: () => act('UpdateAgent', { agent: 'helper', definition: { mcpServers: ['demo', 7] } }),
      status: 400,
      code: 'invalid_input',
      field: 'definition.mcpServers[1]',
    },
    {
      what: 'definition not an object',
      send: () => act('UpdateAgent', { agent: 'helper', definition: ['demo'] }),
      status: 400,
      code: 'invalid_input',
      field: 'definition',
    },
    {
      what: 'unknown definition field',
      send: () => act('UpdateAgent', { agent: 'helper', definition: { mcpServers: [], tools: [] } }),
      status: 400,
      code: 'invalid_input',
      field: 'definition.tools',
    },
    {
      what: 'UpdateAgent of an unknown agent',
      send: () => act('UpdateAgent', { agent: 'ghost', definition: { mcpServers: [] } }),
      status: 404,
      code: 'not_found',
      field: 'agent',
    },
    {
      what: 'agent name with a space',
      send: () => act('CreateAgent', { name: 'has space' }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    {
      what: 'agent name taken',
      send: () => act('CreateAgent', { name: 'helper' }),
      status: 409,
      code: 'conflict',
      field: 'name',
    },
    // other actions
    {
      what: 'RefreshMcpServer of an unknown server',
      send: () => act('RefreshMcpServer', { name: 'ghost' }),
      status: 404,
      code: 'not_found',
      field: 'name',
    },
    {
      what: 'DeleteMcpServer with a bad name',
      send: () => act('DeleteMcpServer', { name: 'A' }),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    {
      what: 'DeleteMcpServer of an unknown server',
      send: () => act('DeleteMcpServer', { name: 'ghost' }),
      status: 404,
      code: 'not_found',
      field: 'name',
    },
    {
      what: 'InvokeTool without a tool',
      send: () => act('InvokeTool', { agent: 'helper' }),
      status: 400,
      code: 'invalid_input',
      field: 'tool',
    },
    {
      what: 'InvokeTool with array arguments',
      send: () => act('InvokeTool', { agent: 'helper', tool: 'demo__echo', arguments: [1] }),
      status: 400,
      code: 'invalid_input',
      field: 'arguments',
    },
    {
      what: 'AuthorizeSigner with an unknown role',
      send: () => act('AuthorizeSigner', { principal: generateKeyPair().principal, role: 'ROOT' }),
      status: 400,
      code: 'invalid_input',
      field: 'role',
    },
    {
      what: 'AuthorizeSigner of the account itself',
      send: () => act('AuthorizeSigner', { principal: api.principal, role: 'WRITER' }),
      status: 409,
      code: 'conflict',
      field: 'principal',
    },
    {
      what: 'unknown action type',
      send: () => act('DropAllTables'),
      status: 400,
      code: 'invalid_input',
      field: 'action.type',
    },
    // signers and the envelope
    {
      what: 'a stranger reading the account',
      send: () => {
        const stranger = new ApiClient(h.apiUrl, generateKeyPair(), api.principal);
        return stranger.raw(stranger.envelope({ type: 'ListMcpServers' }));
      },
      status: 403,
      code: 'forbidden',
      field: 'signer',
    },
    {
      what: 'a stranger signing for the account',
      send: () => {
        const stranger = new ApiClient(h.apiUrl, generateKeyPair(), api.principal);
        return stranger.raw(stranger.envelope({ type: 'SetMcpServer', name: 'evil', config: { url: url() } }));
      },
      status: 403,
      code: 'forbidden',
      field: 'signer',
    },
    {
      what: 'an AGENT signer writing',
      send: () => agentSigner.raw(agentSigner.envelope({ type: 'SetMcpServer', name: 'x', config: { url: url() } })),
      status: 403,
      code: 'forbidden',
      field: 'signer',
    },
    {
      what: 'stale ts',
      send: () =>
        api.raw(api.envelope({ type: 'SetMcpServer', name: 'x', config: { url: url() } }, Date.now() - 60_000)),
      status: 401,
      code: 'unauthenticated',
      field: 'ts',
    },
    {
      what: 'ts in the future',
      send: () => api.raw(api.envelope({ type: 'ListMcpServers' }, Date.now() + 60_000)),
      status: 401,
      code: 'unauthenticated',
      field: 'ts',
    },
    {
      what: 'replayed nonce',
      send: async () => {
        const env = api.envelope({ type: 'ListMcpServers' });
        const first = await api.raw(env);
        if (first.status !== 200) throw new Error('the first send should pass');
        return api.raw(env);
      },
      status: 401,
      code: 'unauthenticated',
      field: 'nonce',
    },
    {
      what: 'bad signature (action changed after signing)',
      send: () => {
        const env = api.envelope({ type: 'SetMcpServer', name: 'x', config: { url: url() } });
        return api.raw({ ...env, action: { ...env.action, name: 'y' } });
      },
      status: 401,
      code: 'unauthenticated',
      field: 'sig',
    },
    // Not the shape of an ed25519 signature (86 canonical base64url characters): malformed input.
    {
      what: 'signature of garbage',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), sig: 'AAAA' }),
      status: 400,
      code: 'invalid_input',
      field: 'sig',
    },
    {
      what: 'envelope without sig',
      send: () => {
        const { sig: _sig, ...rest } = api.envelope({ type: 'ListMcpServers' });
        return api.raw(rest);
      },
      status: 400,
      code: 'invalid_input',
      field: 'sig',
    },
    {
      what: 'envelope with an extra field',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), admin: true }),
      status: 400,
      code: 'invalid_input',
      field: 'admin',
    },
    {
      what: 'envelope that is an array',
      send: () => api.raw([api.envelope({ type: 'ListMcpServers' })]),
      status: 400,
      code: 'invalid_input',
      field: 'envelope',
    },
    {
      what: 'malformed signer',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), signer: 'me' }),
      status: 400,
      code: 'invalid_input',
      field: 'signer',
    },
    {
      what: 'malformed account',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), account: 'acct' }),
      status: 400,
      code: 'invalid_input',
      field: 'account',
    },
    {
      what: 'ts as a string',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), ts: String(Date.now()) }),
      status: 400,
      code: 'invalid_input',
      field: 'ts',
    },
    {
      what: 'short nonce',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), nonce: 'abc' }),
      status: 400,
      code: 'invalid_input',
      field: 'nonce',
    },
    {
      what: 'action without a type',
      send: () => api.raw({ ...api.envelope({ type: 'ListMcpServers' }), action: { name: 'x' } }),
      status: 400,
      code: 'invalid_input',
      field: 'action.type',
    },
    {
      what: 'body that is not JSON',
      send: () => api.raw('{"signer": '),
      status: 400,
      code: 'invalid_input',
      field: 'body',
    },
    { what: 'empty body', send: () => api.raw(''), status: 400, code: 'invalid_input', field: 'body' },
    {
      what: 'body that is not CBOR',
      send: () => cbor(new Uint8Array([0x5a, 0, 0, 0, 10])),
      status: 400,
      code: 'invalid_input',
      field: 'body',
    },
    {
      what: 'a signed CBOR envelope with a bad action',
      send: () => cbor(encodePayload(api.envelope({ type: 'SetMcpServer', name: 'Bad', config: { url: url() } }))),
      status: 400,
      code: 'invalid_input',
      field: 'name',
    },
    {
      what: 'body over 1 MiB',
      send: () =>
        api.raw(JSON.stringify({ ...api.envelope({ type: 'ListMcpServers' }), pad: 'x'.repeat(1024 * 1024) })),
      status: 413,
      code: 'invalid_input',
      field: 'body',
    },
  ];

  it('has at least 40 rows', () => {
    expect(rows.length).toBeGreaterThanOrEqual(40);
  });

  it.each(rows.map((r) => [r.what, r] as const))('%s', async (_what, row) => {
    const before = await h.settledDigest();
    const nats = await h.capture('>');
    const { status, body } = await row.send();
    await h.nc.flush();
    nats.stop();
    expect(body?.error, JSON.stringify(body)).toBeDefined();
    expect({ status, code: body.error.code, field: body.error.details?.field }).toEqual({
      status: row.status,
      code: row.code,
      field: row.field,
    });
    expect(body.error.message.startsWith(`${row.field}:`), body.error.message).toBe(true);
    expect(await h.tableDigest()).toEqual(before);
    expect(nats.messages.map((m) => m.subject)).toEqual([]);
  });

  it('never echoes a header value in an error', async () => {
    const { body } = await set('s', { url: url(), secretHeaders: { Authorization: 'Bearer s3cr3t-value\r\nX: y' } });
    expect(JSON.stringify(body)).not.toContain('s3cr3t-value');
  });

  it('labels metrics with known action types only: made-up types do not mint new series', async () => {
    for (let i = 0; i < 5; i++) expect((await act(`MadeUp${i}Zq`)).status).toBe(400);
    const metrics = await (await fetch(new URL('/metrics', h.internalUrl))).text();
    expect(metrics).toContain('action="unknown"');
    expect(metrics).not.toContain('MadeUp');
    expect(metrics).toContain('action="SetMcpServer"');
  });

  it('a first action that fails writes no account either', async () => {
    const fresh = h.api();
    const before = await h.settledDigest();
    const { status } = await fresh.raw(fresh.envelope({ type: 'SetMcpServer', name: 'Bad', config: { url: url() } }));
    expect(status).toBe(400);
    expect((await fresh.raw(fresh.envelope({ type: 'ListMcpServers' }))).body).toEqual({ servers: [] });
    expect(await h.tableDigest()).toEqual(before);
  });
});
