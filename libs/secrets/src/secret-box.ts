import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { KeyringEntry } from '@mcpx/config';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface Sealed {
  keyId: string;
  /** IV ‖ ciphertext ‖ tag */
  ciphertext: Buffer;
}

/**
 * AES-256-GCM with a key ring: the newest key seals, any key of the ring opens, so keys rotate
 * without downtime. The additional data binds a ciphertext to its account and secret name, so a
 * row copied under another name or account does not open.
 */
export class SecretBox {
  private readonly keys: Map<string, Buffer>;
  private readonly current: KeyringEntry;

  constructor(keyring: KeyringEntry[]) {
    const last = keyring.at(-1);
    if (last === undefined) throw new Error('the secrets key ring is empty');
    this.current = last;
    this.keys = new Map(keyring.map((k) => [k.id, k.key]));
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  seal(plaintext: string, aad: string): Sealed {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.current.id, ciphertext: Buffer.concat([iv, body, cipher.getAuthTag()]) };
  }

  /** Throws an error that names the key id only, never any material. */
  open(sealed: { keyId: string; ciphertext: Uint8Array }, aad: string): string {
    const key = this.keys.get(sealed.keyId);
    if (key === undefined) throw new Error(`secret sealed with unknown key id ${sealed.keyId}`);
    const buf = Buffer.from(sealed.ciphertext);
    if (buf.length < IV_BYTES + TAG_BYTES) throw new Error('secret ciphertext is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
    try {
      return Buffer.concat([
        decipher.update(buf.subarray(IV_BYTES, buf.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new Error(`secret does not open with key ${sealed.keyId}`);
    }
  }
}

/** The additional authenticated data of an account's secret. */
export function secretAad(account: string, name: string): string {
  return `${account}\u0000${name}`;
}

/**
 * The additional authenticated data of a server's sealed OAuth state (`registry.oauth_connections`):
 * `client` (client information, PKCE verifier, discovery) or `tokens`. Shared by the registry,
 * which writes it, and the proxy, which reads the tokens.
 */
export function oauthSecretAad(account: string, serverId: string, part: 'client' | 'tokens'): string {
  return secretAad(account, `oauth:${serverId}:${part}`);
}

/**
 * The additional authenticated data of an account's sealed vendor-connection tokens
 * (`registry.vendor_connections`, built-in servers, docs/servers.md#built-in-servers). Shared by the registry, which
 * writes them, and the proxy, which reads the access token. `:` never occurs in a secret name.
 */
export function vendorTokensAad(account: string, vendor: string): string {
  return secretAad(account, `vendor-connection:${vendor}`);
}
