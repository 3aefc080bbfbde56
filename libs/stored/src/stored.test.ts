import { SecretBox, oauthSecretAad, vendorTokensAad } from '@mcpx/secrets';
import { describe, expect, it } from 'vitest';
import { encodePayload } from '@mcpx/contracts';
import { StoredShapeError } from './reads/stored-shape.js';
import {
  decodeServerConfig,
  openOAuthTokens,
  openVendorTokens,
  sealOAuthTokens,
  sealVendorTokens,
  ServerConfigColumn,
} from './stored.js';

const box = new SecretBox([{ id: 'k1', key: Buffer.alloc(32, 3) }]);

describe('stored token codecs (one casing)', () => {
  it('seals vendor tokens with RFC 6749 names and opens them; a row of the older camelCase opens the same', () => {
    const sealed = sealVendorTokens(box, 'acct', 'github', {
      accessToken: 'gho_a',
      refreshToken: 'ghr_b',
      expiresAt: '2026-12-01T00:00:00.000Z',
    });
    const raw = JSON.parse(box.open(sealed, vendorTokensAad('acct', 'github'))) as Record<string, unknown>;
    expect(raw).toEqual({ access_token: 'gho_a', refresh_token: 'ghr_b', expires_at: '2026-12-01T00:00:00.000Z' });
    const row = { tokens_key_id: sealed.keyId, tokens_sealed: sealed.ciphertext };
    expect(openVendorTokens(box, 'acct', 'github', row)).toEqual({
      accessToken: 'gho_a',
      refreshToken: 'ghr_b',
      expiresAt: '2026-12-01T00:00:00.000Z',
    });
    const old = box.seal(JSON.stringify({ accessToken: 'gho_old' }), vendorTokensAad('acct', 'github'));
    expect(
      openVendorTokens(box, 'acct', 'github', { tokens_key_id: old.keyId, tokens_sealed: old.ciphertext }),
    ).toEqual({ accessToken: 'gho_old' });
    // Bound to its account and vendor: a copied row does not open.
    expect(() => openVendorTokens(box, 'other', 'github', row)).toThrow();
  });

  it('opens OAuth tokens exactly as received, only for the URL they were issued for', () => {
    const tokens = { access_token: 'at', token_type: 'Bearer', refresh_token: 'rt', expires_in: 60 };
    const sealed = sealOAuthTokens(box, 'acct', 'srv', tokens);
    const row = {
      tokens_key_id: sealed.keyId,
      tokens_sealed: sealed.ciphertext,
      tokens_server_url: 'https://a.example/mcp',
    };
    expect(openOAuthTokens(box, 'acct', 'srv', row, 'https://a.example/mcp')).toEqual(tokens);
    expect(openOAuthTokens(box, 'acct', 'srv', row, 'https://b.example/mcp')).toBeUndefined();
    expect(openOAuthTokens(box, 'acct', 'srv', undefined, 'https://a.example/mcp')).toBeUndefined();
  });
});

describe('registry.mcp_servers.config_cbor: decoded by its field rules, never cast', () => {
  const config = {
    url: 'https://a.example/mcp',
    transport: 'http',
    headers: { 'X-Team': 'blue' },
    secretRefs: { Authorization: 'mcp-a-authorization' },
    auth: 'oauth',
    oauthClient: { clientId: 'c1', grant: 'client_credentials', credential: 'private_key', keyAlg: 'ES256' },
    pin: 'review',
  };

  it('reads back what was written, whole (a field this version does not name survives)', () => {
    expect(decodeServerConfig(encodePayload(config))).toEqual(config);
    expect(decodeServerConfig(encodePayload({ ...config, later: { x: 1 } }))).toEqual({ ...config, later: { x: 1 } });
    expect(decodeServerConfig(ServerConfigColumn.encode({ url: 'https://b.example/mcp' }))).toEqual({
      url: 'https://b.example/mcp',
    });
  });

  it('refuses a row that does not hold the shape, naming the column and the first wrong field, never a value', () => {
    const cases: Array<[unknown, string]> = [
      [{ ...config, url: 42 }, 'config_cbor.url'],
      [{ ...config, transport: 'ws' }, 'config_cbor.transport'],
      [{ ...config, headers: { 'X-Team': 7 } }, 'config_cbor.headers.X-Team'],
      [{ ...config, auth: 'basic' }, 'config_cbor.auth'],
      [{ ...config, oauthClient: { clientId: 'c1', grant: 'password' } }, 'config_cbor.oauthClient.grant'],
      [{ ...config, oauthClient: { ...config.oauthClient, keyAlg: 'HS256' } }, 'config_cbor.oauthClient.keyAlg'],
      [{ ...config, pin: 'always' }, 'config_cbor.pin'],
      [['https://a.example/mcp'], 'config_cbor'],
    ];
    for (const [row, field] of cases) {
      let err: unknown;
      try {
        decodeServerConfig(encodePayload(row));
      } catch (e) {
        err = e;
      }
      expect(err, field).toBeInstanceOf(StoredShapeError);
      expect(err, field).toMatchObject({
        code: 'stored_shape_invalid',
        column: 'registry.mcp_servers.config_cbor',
        field,
      });
      expect((err as Error).message).not.toContain('blue');
    }
    expect(() => decodeServerConfig(new Uint8Array([0xff]))).toThrow(StoredShapeError);
  });

  it('opens sealed OAuth tokens by their rules: a sealed value of another shape is refused, not cast', () => {
    const bad = box.seal(
      JSON.stringify({ access_token: 42, token_type: 'Bearer' }),
      oauthSecretAad('acct', 'srv', 'tokens'),
    );
    const row = { tokens_key_id: bad.keyId, tokens_sealed: bad.ciphertext, tokens_server_url: 'https://a.example/mcp' };
    expect(() => openOAuthTokens(box, 'acct', 'srv', row, 'https://a.example/mcp')).toThrow(StoredShapeError);
  });
});
