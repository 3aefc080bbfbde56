import { describe, expect, it } from 'vitest';
import { generateKeyPair, signAction, verifySignature } from './envelope.js';

describe('signed envelopes', () => {
  it('verifies what it signs, whatever the key order', () => {
    const key = generateKeyPair();
    const env = signAction(key, key.principal, { type: 'ListMcpServers' });
    expect(verifySignature(env)).toBe(true);
    const reordered = { sig: env.sig, action: env.action, nonce: env.nonce, ts: env.ts, account: env.account, signer: env.signer };
    expect(verifySignature(reordered)).toBe(true);
  });

  it('refuses a changed action, a changed time and a foreign signer', () => {
    const key = generateKeyPair();
    const other = generateKeyPair();
    const env = signAction(key, key.principal, { type: 'SetMcpServer', name: 'a' });
    expect(verifySignature({ ...env, action: { type: 'SetMcpServer', name: 'b' } })).toBe(false);
    expect(verifySignature({ ...env, ts: env.ts + 1 })).toBe(false);
    expect(verifySignature({ ...env, signer: other.principal })).toBe(false);
    expect(verifySignature({ ...env, sig: 'AAAA' })).toBe(false);
    expect(verifySignature({ ...env, signer: 'not a key' })).toBe(false);
  });
});
