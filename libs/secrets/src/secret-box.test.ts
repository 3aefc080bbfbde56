import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox, secretAad } from './secret-box.js';

const k = (id: string) => ({ id, key: randomBytes(32) });

describe('SecretBox', () => {
  it('opens what it sealed and keeps no plaintext in the ciphertext', () => {
    const box = new SecretBox([k('a')]);
    const sealed = box.seal('Bearer s3cr3t-value', secretAad('acct', 'mcp-x-authorization'));
    expect(sealed.ciphertext.toString('utf8')).not.toContain('s3cr3t');
    expect(box.open(sealed, secretAad('acct', 'mcp-x-authorization'))).toBe('Bearer s3cr3t-value');
  });

  it('rotates: the newest key seals, old ciphertexts still open', () => {
    const old = k('k1');
    const before = new SecretBox([old]).seal('v1', 'aad');
    const rotated = new SecretBox([old, k('k2')]);
    expect(rotated.open(before, 'aad')).toBe('v1');
    expect(rotated.seal('v2', 'aad').keyId).toBe('k2');
  });

  it('refuses another account or name, a missing key and tampering, without naming material', () => {
    const box = new SecretBox([k('a')]);
    const sealed = box.seal('value', secretAad('acct1', 'n'));
    expect(() => box.open(sealed, secretAad('acct2', 'n'))).toThrow(/does not open with key a/);
    expect(() => new SecretBox([k('b')]).open(sealed, secretAad('acct1', 'n'))).toThrow(/unknown key id a/);
    const tampered = Buffer.from(sealed.ciphertext);
    tampered[14] = (tampered[14] ?? 0) ^ 1;
    expect(() => box.open({ keyId: 'a', ciphertext: tampered }, secretAad('acct1', 'n'))).toThrow();
  });
});
