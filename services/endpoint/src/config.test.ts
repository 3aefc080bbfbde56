import { describe, expect, it } from 'vitest';
import { LOCAL_DEV_KEYRING } from '@mcpx/config';
import { loadEndpointConfig } from './config.js';

const OWN_KEYRING = `k1:${Buffer.alloc(32, 3).toString('base64')}`;

/** The refusal of a setting: its `code` and the variable it names (never the value). */
function refusal(env: NodeJS.ProcessEnv): { code?: string; setting?: string; message: string } {
  try {
    loadEndpointConfig(env);
  } catch (err) {
    return err as { code?: string; setting?: string; message: string };
  }
  throw new Error('the settings were taken');
}

describe("the endpoint's settings (the one settings parser of @mcpx/config)", () => {
  it('takes the defaults when unset or empty', () => {
    const c = loadEndpointConfig({ HTTP_PORT: '', ENDPOINT_PAGE_SIZE: '', ENDPOINT_LEAN_CALLS: '' });
    expect(c).toMatchObject({
      httpPort: 8083,
      internalHttpPort: 9083,
      pageSize: 100,
      tokenFailuresPerAddress: { ratePerSecond: 0.2, burst: 20 },
      streams: { perToken: 8, perAccount: 64, perInstance: 4096 },
      approvalTtlMs: 600_000,
      leanCalls: true,
    });
    expect(loadEndpointConfig({ HTTP_PORT: '0' }).internalHttpPort).toBe(0);
    expect(loadEndpointConfig({ ENDPOINT_LEAN_CALLS: 'off' }).leanCalls).toBe(false);
  });

  it('refuses what does not parse whole, with invalid_config naming the variable', () => {
    for (const [name, value] of [
      ['HTTP_PORT', '80x'],
      ['HTTP_PORT', '70000'],
      ['INTERNAL_HTTP_PORT', '-1'],
      ['ENDPOINT_PAGE_SIZE', '0'],
      ['ENDPOINT_PAGE_SIZE', '2.5'],
      ['ENDPOINT_PAGE_SIZE', '1001'],
      ['ENDPOINT_TOKEN_FAILURES_PER_ADDRESS', 'fast'],
      ['ENDPOINT_TOKEN_FAILURES_PER_ADDRESS_BURST', '0'],
      ['ENDPOINT_STREAMS_PER_TOKEN', '0'],
      ['ENDPOINT_STREAMS_PER_ACCOUNT', 'many'],
      ['ENDPOINT_STREAMS_PER_INSTANCE', '1.5'],
      ['APPROVAL_TTL_MS', '-5'],
      ['ENDPOINT_LEAN_CALLS', 'maybe'],
    ] as const) {
      const err = refusal({ [name]: value });
      expect(err, `${name}=${value}`).toMatchObject({ code: 'invalid_config', setting: name });
      // The value is not echoed (short ones may be part of the wording, e.g. "1 to 1000").
      if (value.length >= 3) expect(err.message).not.toContain(value);
    }
  });

  it("uses the local profile's development key ring when SECRETS_KEYRING is unset there (npm start), and no development key elsewhere", () => {
    const local = loadEndpointConfig({ OUTBOUND_PROFILE: 'local' });
    expect(local.keyring.map((k) => `${k.id}:${k.key.toString('base64')}`)).toEqual([LOCAL_DEV_KEYRING]);
    expect(
      loadEndpointConfig({ OUTBOUND_PROFILE: 'local', SECRETS_KEYRING: OWN_KEYRING }).keyring.map((k) => k.id),
    ).toEqual(['k1']);
    expect(loadEndpointConfig({ SECRETS_KEYRING: OWN_KEYRING }).keyring.map((k) => k.id)).toEqual(['k1']);
    // Production without a ring: a key of the process (as before); with the development key: refused.
    expect(loadEndpointConfig({}).keyring).toEqual([]);
    expect(refusal({ OUTBOUND_PROFILE: 'production', SECRETS_KEYRING: LOCAL_DEV_KEYRING })).toMatchObject({
      code: 'invalid_config',
      setting: 'SECRETS_KEYRING',
    });
  });

  it('reads ENDPOINT_PUBLIC_URL once: the public URL, its host allowed, and the OAuth resource base', () => {
    expect(loadEndpointConfig({})).toMatchObject({ publicUrl: 'http://127.0.0.1:8083' });
    expect(loadEndpointConfig({}).oauth).toBeUndefined();
    const c = loadEndpointConfig({ ENDPOINT_PUBLIC_URL: 'https://mcp.example.com//' });
    expect(c.publicUrl).toBe('https://mcp.example.com');
    expect(c.allowedHosts).toContain('mcp.example.com');
    expect(() => loadEndpointConfig({ ENDPOINT_PUBLIC_URL: 'nope' })).toThrow(/ENDPOINT_PUBLIC_URL/);
  });

  it('OAuth is off unless ENDPOINT_AUTHORIZATION_SERVER is set; a malformed value stops the start, naming it', () => {
    expect(loadEndpointConfig({ ENDPOINT_AUTHORIZATION_SERVER: ' ' }).oauth).toBeUndefined();
    expect(
      loadEndpointConfig({
        ENDPOINT_AUTHORIZATION_SERVER: 'https://mcpx.example.com/',
        ENDPOINT_PUBLIC_URL: 'https://mcp.example.com',
      }).oauth,
    ).toEqual({
      authorizationServer: 'https://mcpx.example.com',
      publicUrl: 'https://mcp.example.com',
    });
    // Without a public URL: resource URLs on each request's origin.
    expect(loadEndpointConfig({ ENDPOINT_AUTHORIZATION_SERVER: 'http://127.0.0.1:8080' }).oauth).toEqual({
      authorizationServer: 'http://127.0.0.1:8080',
    });
    for (const bad of [
      'mcpx.example.com',
      'ftp://mcpx.example.com',
      'https://mcpx.example.com/?a=1',
      'https://mcpx.example.com/#x',
    ]) {
      expect(() => loadEndpointConfig({ ENDPOINT_AUTHORIZATION_SERVER: bad }), bad).toThrow(
        /ENDPOINT_AUTHORIZATION_SERVER/,
      );
    }
    expect(() =>
      loadEndpointConfig({ ENDPOINT_AUTHORIZATION_SERVER: 'https://a.example', ENDPOINT_PUBLIC_URL: 'nope' }),
    ).toThrow(/ENDPOINT_PUBLIC_URL/);
    // A public URL with a query is a base for nothing under OAuth (as before, taken without it).
    expect(() =>
      loadEndpointConfig({
        ENDPOINT_AUTHORIZATION_SERVER: 'https://a.example',
        ENDPOINT_PUBLIC_URL: 'https://mcp.example.com/?x=1',
      }),
    ).toThrow(/ENDPOINT_PUBLIC_URL/);
    expect(loadEndpointConfig({ ENDPOINT_PUBLIC_URL: 'https://mcp.example.com/?x=1' }).oauth).toBeUndefined();
  });

  it('CONSOLE_URL is the base of approval links: default the authorization server (the registry), else none; a malformed value stops the start, naming it', () => {
    expect(loadEndpointConfig({}).consoleUrl).toBeUndefined();
    expect(loadEndpointConfig({ ENDPOINT_AUTHORIZATION_SERVER: 'https://mcpx.example.com/' }).consoleUrl).toBe(
      'https://mcpx.example.com',
    );
    expect(
      loadEndpointConfig({
        ENDPOINT_AUTHORIZATION_SERVER: 'https://mcpx.example.com',
        CONSOLE_URL: 'https://console.example.com//',
      }).consoleUrl,
    ).toBe('https://console.example.com');
    for (const bad of ['console.example.com', 'javascript:alert(1)', 'https://console.example.com/?a=1']) {
      expect(() => loadEndpointConfig({ CONSOLE_URL: bad }), bad).toThrow(/CONSOLE_URL/);
    }
  });
});
