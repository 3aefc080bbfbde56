import { SecretBox, vendorTokensAad } from '@mcpx/secrets';
import { describe, expect, it } from 'vitest';
import { openOAuthTokens, openVendorTokens, sealOAuthTokens, sealVendorTokens } from './stored.js';

const box = new SecretBox([{ id: 'k1', key: Buffer.alloc(32, 3) }]);

describe('stored token codecs (one casing)', () => {
  it('seals vendor tokens with RFC 6749 names and opens them; a row of the older camelCase opens the same', () => {
    const sealed = sealVendorTokens(box, 'acct', 'github', { accessToken: 'gho_a', refreshToken: 'ghr_b', expiresAt: '2026-12-01T00:00:00.000Z' });
    const raw = JSON.parse(box.open(sealed, vendorTokensAad('acct', 'github'))) as Record<string, unknown>;
    expect(raw).toEqual({ access_token: 'gho_a', refresh_token: 'ghr_b', expires_at: '2026-12-01T00:00:00.000Z' });
    const row = { tokens_key_id: sealed.keyId, tokens_sealed: sealed.ciphertext };
    expect(openVendorTokens(box, 'acct', 'github', row)).toEqual({ accessToken: 'gho_a', refreshToken: 'ghr_b', expiresAt: '2026-12-01T00:00:00.000Z' });
    const old = box.seal(JSON.stringify({ accessToken: 'gho_old' }), vendorTokensAad('acct', 'github'));
    expect(openVendorTokens(box, 'acct', 'github', { tokens_key_id: old.keyId, tokens_sealed: old.ciphertext })).toEqual({ accessToken: 'gho_old' });
    // Bound to its account and vendor: a copied row does not open.
    expect(() => openVendorTokens(box, 'other', 'github', row)).toThrow();
  });

  it('opens OAuth tokens exactly as received, only for the URL they were issued for', () => {
    const tokens = { access_token: 'at', token_type: 'Bearer', refresh_token: 'rt', expires_in: 60 };
    const sealed = sealOAuthTokens(box, 'acct', 'srv', tokens);
    const row = { tokens_key_id: sealed.keyId, tokens_sealed: sealed.ciphertext, tokens_server_url: 'https://a.example/mcp' };
    expect(openOAuthTokens(box, 'acct', 'srv', row, 'https://a.example/mcp')).toEqual(tokens);
    expect(openOAuthTokens(box, 'acct', 'srv', row, 'https://b.example/mcp')).toBeUndefined();
    expect(openOAuthTokens(box, 'acct', 'srv', undefined, 'https://a.example/mcp')).toBeUndefined();
  });
});
