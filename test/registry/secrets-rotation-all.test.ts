import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxy, type RunningProxy } from '@mcpx/proxy';
import {
  echoTool,
  startOAuthServer,
  startProtectedMcpServer,
  startTestMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { TestBrowser } from '../support/oauth-browser.js';
import { RegistryHarness, testTelemetry } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';
import { NEW_KEY, OLD_KEY, allUnder, keyIdsInUse, rotateSecrets, rotationReport, tables } from './rotation.js';

const HEADER_VALUE = 'Bearer hdr-rotate-7c1d0e';
const CLIENT_SECRET = 'prereg-rotate-secret-5b9e2f41';
const VENDOR_TOKEN = 'gho_rotateVendor42a7';

/**
 * Everything sealed with the key ring is re-sealed by `rotate-secrets`, not only account secrets:
 * after it, a ring holding only the new key opens the secret header, the OAuth client secret and
 * tokens, and the vendor tokens, in the registry and in the proxy.
 */
describe('secrets: rotation covers every sealed value', () => {
  let h: RegistryHarness;
  let as: TestOAuthServer;
  let guarded: TestMcpServer;
  let headed: TestMcpServer;
  let vendor: TestMcpServer;
  let proxy: RunningProxy | undefined;

  beforeAll(async () => {
    as = await startOAuthServer();
    [guarded, headed, vendor] = await Promise.all([
      startProtectedMcpServer(as),
      startTestMcpServer({ requireHeader: { name: 'Authorization', value: HEADER_VALUE } }),
      // The test endpoint of the `github` built-in: it answers only with the vendor's token. Its
      // echo says it only reads (a built-in's unhinted echo would wait for a human).
      startTestMcpServer({
        requireHeader: { name: 'Authorization', value: `Bearer ${VENDOR_TOKEN}` },
        tools: [{ ...echoTool(), annotations: { readOnlyHint: true } }],
      }),
    ]);
    // No proxy yet (it starts on the new ring only), no background probe within the test.
    h = await RegistryHarness.start({
      env: { SECRETS_KEYRING: OLD_KEY, BUILTIN_ENDPOINTS: `github=${vendor.url}` },
      registry: { reprobe: { baseMs: 600_000 } },
    });
  });

  afterAll(async () => {
    await proxy?.stop();
    await h?.stop();
    await Promise.all([guarded?.close(), headed?.close(), vendor?.close()]);
    await as?.close();
  });

  it('re-seals secret headers, OAuth client state and tokens, vendor tokens; then the old key can go', async () => {
    let api = h.api();
    const key = api.key;
    // A custom server with a secret header.
    expect(
      (
        await api.act('SetMcpServer', {
          name: 'headed',
          config: { url: headed.url, secretHeaders: { Authorization: HEADER_VALUE } },
        })
      ).server.status.state,
    ).toBe('ok');
    // An oauth server with a pre-registered client, authorized: client secret and tokens sealed.
    as.provider.registered.set('rotate-client', {
      client_id: 'rotate-client',
      client_secret: CLIENT_SECRET,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      redirect_uris: [`${h.apiUrl}/v1/oauth/callback`],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    const set = await api.act('SetMcpServer', {
      name: 'guarded',
      config: { url: guarded.url, auth: 'oauth', oauth: { clientId: 'rotate-client', clientSecret: CLIENT_SECRET } },
    });
    expect((await new TestBrowser().open(set.authorizationUrl)).text).toContain('Connected to guarded');
    // A vendor connection.
    await api.act('SetVendorConnection', { vendor: 'github', accessToken: VENDOR_TOKEN });
    await api.act('CreateAgent', { name: 'all', definition: { mcpServers: ['headed', 'guarded', 'github'] } });
    expect(await keyIdsInUse(h.sql)).toEqual(allUnder('old'));

    // The services roll onto [old, new]; the rotation runs beside them; a second run has nothing to do.
    await h.replaceRegistry({ SECRETS_KEYRING: `${OLD_KEY},${NEW_KEY}` });
    const first = await rotateSecrets(h.env.DATABASE_URL ?? '', `${OLD_KEY},${NEW_KEY}`);
    expect(first.code, first.stderr).toBe(0);
    expect(rotationReport(first)).toEqual({
      rotated: 4,
      keyId: 'new',
      left: 0,
      tables: tables([1, 0], [2, 0], [1, 0]),
    });
    expect(await keyIdsInUse(h.sql)).toEqual(allUnder('new'));
    const again = await rotateSecrets(h.env.DATABASE_URL ?? '', `${OLD_KEY},${NEW_KEY}`);
    expect(rotationReport(again)).toEqual({
      rotated: 0,
      keyId: 'new',
      left: 0,
      tables: tables([0, 0], [0, 0], [0, 0]),
    });
    const printed = first.stdout + first.stderr + again.stdout + again.stderr;
    for (const secret of [HEADER_VALUE, CLIENT_SECRET, VENDOR_TOKEN, OLD_KEY.slice(4), NEW_KEY.slice(4)])
      expect(printed).not.toContain(secret);

    // Only the new key is left in the ring, of the registry and of a proxy.
    await h.replaceRegistry({ SECRETS_KEYRING: NEW_KEY });
    proxy = await startProxy(h.config('proxy', { SECRETS_KEYRING: NEW_KEY }), {
      telemetry: await testTelemetry(),
      logSink: (line) => void h.logs.push(line),
    });
    api = new ApiClient(h.apiUrl, key);

    // The registry discovers the built-in with the vendor token.
    expect((await api.act('RefreshMcpServer', { name: 'github' })).server.status.state).toBe('ok');
    // The registry discovers the custom server with its secret header.
    const handshakes = headed.stats.handshakes;
    expect((await api.act('RefreshMcpServer', { name: 'headed' })).server.status.state).toBe('ok');
    expect(headed.stats.handshakes).toBeGreaterThan(handshakes);
    const wanted = ['github__echo', 'guarded__echo', 'headed__echo'];
    await eventually(
      async () => {
        const names = ((await api.act('ListAgentTools', { agent: 'all' })).tools as Array<{ name: string }>).map(
          (t) => t.name,
        );
        return wanted.every((n) => names.includes(n)) ? true : undefined;
      },
      15_000,
      'the tools of all three servers',
    );
    const invoke = async (tool: string, text: string): Promise<string> =>
      (await api.act('InvokeTool', { agent: 'all', tool, arguments: { text } })).result.text as string;

    // The proxy sends the secret header and the vendor token.
    expect(await invoke('headed__echo', 'header')).toBe('echo: header');
    expect(await invoke('github__echo', 'vendor')).toBe('echo: vendor');
    expect(vendor.stats.headersSeen.get('authorization')).toContain(`Bearer ${VENDOR_TOKEN}`);
    // The proxy uses the stored OAuth access token as it is (no refresh needed)…
    const refreshes = as.stats.refreshes;
    expect(await invoke('guarded__echo', 'token')).toBe('echo: token');
    expect(as.stats.refreshes).toBe(refreshes);
    // …and once the server refuses it, the registry refreshes it, presenting the stored refresh
    // token with the pre-registered client's secret: both opened under the new key.
    as.provider.expireAccessTokens();
    expect(await invoke('guarded__echo', 'refreshed')).toBe('echo: refreshed');
    expect(as.stats.refreshes).toBe(refreshes + 1);
    expect(as.stats.refreshReplays).toBe(0);
    expect(await keyIdsInUse(h.sql)).toEqual(allUnder('new'));

    // No log line of any service carries one of the secrets.
    const logs = h.logs.join('\n');
    for (const secret of [HEADER_VALUE, CLIENT_SECRET, VENDOR_TOKEN]) expect(logs).not.toContain(secret);
  });
});
