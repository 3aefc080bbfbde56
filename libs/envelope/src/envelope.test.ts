import { describe, expect, it } from 'vitest';
import { generateKeyPair, signAction, signingBytes, verifySignature } from './envelope.js';
import { parseEnvelope } from './envelope-parse.js';

describe('signed envelopes', () => {
  it('verifies what it signs, whatever the key order', () => {
    const key = generateKeyPair();
    const env = signAction(key, key.principal, { type: 'ListMcpServers' });
    expect(verifySignature(env)).toBe(true);
    const reordered = {
      sig: env.sig,
      action: env.action,
      nonce: env.nonce,
      ts: env.ts,
      account: env.account,
      signer: env.signer,
    };
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

describe('bounded signing bytes', () => {
  it('refuses an envelope whose shared objects unfold past the bounds, without unfolding it', () => {
    const key = generateKeyPair();
    const env = signAction(key, key.principal, { type: 'SetMcpServer', name: 'a' });
    // 2^60 leaves unfolded, 60 arrays in memory: what a shared-value CBOR body decodes to.
    let bomb: unknown = 0;
    for (let i = 0; i < 60; i++) bomb = [bomb, bomb];
    const forged = { ...env, action: { type: 'SetMcpServer', name: 'a', config: bomb } };
    expect(() => signingBytes(forged)).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        details: expect.objectContaining({ field: 'envelope', rule: 'items' }),
      }),
    );
    expect(verifySignature(forged)).toBe(false);
    // A cycle is bounded the same way.
    const cyclic: Record<string, unknown> = { type: 'X' };
    cyclic.self = cyclic;
    expect(verifySignature({ ...env, action: cyclic as { type: string } })).toBe(false);
  });

  it('still signs and verifies envelopes within the bounds, nested ones included', () => {
    const key = generateKeyPair();
    let nested: unknown = 'leaf';
    for (let i = 0; i < 100; i++) nested = { n: nested };
    const env = signAction(key, key.principal, { type: 'SetLambdaTool', document: nested });
    expect(verifySignature(env)).toBe(true);
  });
});

describe('parseEnvelope', () => {
  const field = (body: unknown): unknown => {
    try {
      parseEnvelope(body);
    } catch (e) {
      return (e as { details: { field: unknown } }).details.field;
    }
    return null;
  };

  it('names the first malformed field', () => {
    const key = generateKeyPair();
    const env = signAction(key, key.principal, { type: 'ListMcpServers' });
    expect(parseEnvelope(env)).toBe(env);
    expect(field(null)).toBe('envelope');
    expect(field([env])).toBe('envelope');
    expect(field({ ...env, signer: 'x' })).toBe('signer');
    expect(field({ ...env, ts: 1.5 })).toBe('ts');
    expect(field({ ...env, nonce: 'short' })).toBe('nonce');
    expect(field({ ...env, action: { type: 1 } })).toBe('action.type');
    expect(field({ ...env, sig: 1 })).toBe('sig');
    expect(field({ ...env, extra: 1 })).toBe('extra');
    expect(field({ ...env, '\u001b[31mred': 1 })).toBe('envelope');
  });
  it('refuses a second spelling of the same signature or key (the unused low bits of base64url set)', () => {
    const key = generateKeyPair();
    const env = signAction(key, key.principal, { type: 'ListMcpServers' });
    // The last character of 86 (signature) or 43 (key) base64url characters carries unused bits:
    // a neighbour character can decode to the same bytes, and the signature would verify alike.
    const respell = (s: string): string[] => {
      const want = Buffer.from(s, 'base64url');
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      return [...alphabet]
        .map((c) => s.slice(0, -1) + c)
        .filter((t) => t !== s && Buffer.from(t, 'base64url').equals(want));
    };
    const sigs = respell(env.sig);
    expect(sigs.length).toBeGreaterThan(0);
    for (const sig of sigs) expect(field({ ...env, sig })).toBe('sig');
    for (const signer of respell(env.signer)) expect(field({ ...env, signer })).toBe('signer');
    for (const account of respell(env.account)) expect(field({ ...env, account })).toBe('account');
    expect(field({ ...env, sig: `${env.sig}!` })).toBe('sig');
    expect(parseEnvelope(env)).toBe(env);
  });
});
