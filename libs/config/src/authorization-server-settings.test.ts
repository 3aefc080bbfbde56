import { describe, expect, it } from 'vitest';
import { loadAuthorizationServerSettings } from './authorization-server-settings.js';
import { ConfigError } from './config-error.js';

describe('loadAuthorizationServerSettings', () => {
  it('defaults: port 8084 (internal 9084), the issuer and the console unset, the shared database URL', () => {
    const s = loadAuthorizationServerSettings({ DATABASE_URL: 'postgres://db/mcpx' });
    expect(s.httpPort).toBe(8084);
    expect(s.internalHttpPort).toBe(9084);
    expect(s.publicUrl).toBeUndefined();
    expect(s.consoleUrl).toBeUndefined();
    expect(s.databaseUrl).toBe('postgres://db/mcpx');
    expect(s.outbound.profile).toBe('production');
  });

  it('takes its own login and URLs, without trailing slashes, and never reads the key ring or NATS', () => {
    const s = loadAuthorizationServerSettings({
      DATABASE_URL: 'postgres://shared/mcpx',
      AUTHORIZATION_SERVER_DATABASE_URL: 'postgres://as@db/mcpx',
      AUTHORIZATION_SERVER_PUBLIC_URL: 'https://auth.example.com/',
      REGISTRY_PUBLIC_URL: 'https://mcp.example.com/',
      SECRETS_KEYRING: 'not even parsed',
      NATS_USER: 'x',
    });
    expect(s.databaseUrl).toBe('postgres://as@db/mcpx');
    expect(s.publicUrl).toBe('https://auth.example.com');
    expect(s.consoleUrl).toBe('https://mcp.example.com');
    expect(JSON.stringify(s)).not.toContain('not even parsed');
  });

  it.each([
    ['AUTHORIZATION_SERVER_PUBLIC_URL', 'ftp://x'],
    ['AUTHORIZATION_SERVER_PUBLIC_URL', 'https://x/?q=1'],
    ['REGISTRY_PUBLIC_URL', 'not a url'],
    ['LOG_LEVEL', 'loud'],
    ['AUTHORIZATION_SERVER_BODY_TIMEOUT_MS', '5'],
  ])('a malformed %s is a ConfigError naming it', (name, value) => {
    let err: unknown;
    try {
      loadAuthorizationServerSettings({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(name);
  });
});
