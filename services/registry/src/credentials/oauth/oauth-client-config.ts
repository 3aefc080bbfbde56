import { createPrivateKey } from 'node:crypto';
import { invalidInput } from '@mcpx/contracts';
import {
  CLIENT_ASSERTION_ALGS,
  OAuthGrants,
  type ClientAssertionAlg,
  type OAuthGrant,
  type StoredOAuthClient,
} from '@mcpx/stored';
import type { OAuthClientInformationMixed } from '@mcpx/mcp-client';

/** The grants, assertion algorithms and stored client of `config.oauth`: defined once in `@mcpx/stored`. */
export { CLIENT_ASSERTION_ALGS, OAuthGrants, type ClientAssertionAlg, type OAuthGrant, type StoredOAuthClient };

/** `config.oauth` of SetMcpServer: a client the owner registered with the authorization server. */
export interface PreRegisteredClient {
  clientId: string;
  grant: OAuthGrant;
  /** A confidential client's secret: sealed with the OAuth state, never stored in the config. */
  clientSecret?: string;
  /**
   * `client_credentials` only, instead of a secret: an unencrypted PEM PKCS#8 private key that
   * signs RFC 7523 client assertions with `keyAlg`. Sealed like the secret.
   */
  privateKey?: string;
  keyAlg?: ClientAssertionAlg;
  /** `client_credentials` only: the scope asked for in each token request. */
  scope?: string;
}

const MAX_CLIENT_ID_BYTES = 512;
const MAX_CLIENT_SECRET_BYTES = 4096;
const MAX_PRIVATE_KEY_BYTES = 16 * 1024;
const MAX_SCOPE_BYTES = 1024;
const KNOWN_FIELDS = ['clientId', 'clientSecret', 'grant', 'privateKey', 'keyAlg', 'scope'];
/** RFC 6749 §3.3: scope tokens of visible ASCII but `"` and `\`, separated by single spaces. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/**
 * Validates `config.oauth` (only with `auth: 'oauth'`). Absent: dynamic client registration (or a
 * client ID metadata document, where the authorization server supports it) as before. Errors name
 * the field and never echo a value.
 */
export function validatePreRegisteredClient(raw: unknown, auth: unknown): PreRegisteredClient | undefined {
  if (raw === undefined) return undefined;
  if (auth !== 'oauth') throw invalidInput('config.oauth', 'is only taken with auth oauth');
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalidInput(
      'config.oauth',
      'must be an object {clientId, clientSecret?, grant?, privateKey?, keyAlg?, scope?}',
    );
  const o = raw as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => !KNOWN_FIELDS.includes(k));
  if (extra !== undefined) throw invalidInput(`config.oauth.${extra.slice(0, 40)}`, 'is not a known field');
  if (
    typeof o.clientId !== 'string' ||
    o.clientId === '' ||
    Buffer.byteLength(o.clientId) > MAX_CLIENT_ID_BYTES ||
    hasControlCharacter(o.clientId)
  ) {
    throw invalidInput('config.oauth.clientId', `must be a non-empty string of at most ${MAX_CLIENT_ID_BYTES} bytes`);
  }
  if (o.grant !== undefined && o.grant !== OAuthGrants.authorizationCode && o.grant !== OAuthGrants.clientCredentials) {
    throw invalidInput('config.oauth.grant', 'must be authorization_code or client_credentials');
  }
  const grant: OAuthGrant = o.grant ?? OAuthGrants.authorizationCode;
  const client: PreRegisteredClient = { clientId: o.clientId, grant };
  if (o.clientSecret !== undefined) {
    if (
      typeof o.clientSecret !== 'string' ||
      o.clientSecret === '' ||
      Buffer.byteLength(o.clientSecret) > MAX_CLIENT_SECRET_BYTES
    ) {
      throw invalidInput(
        'config.oauth.clientSecret',
        `must be a non-empty string of at most ${MAX_CLIENT_SECRET_BYTES} bytes`,
      );
    }
    client.clientSecret = o.clientSecret;
  }
  if (grant === OAuthGrants.authorizationCode) {
    for (const field of ['privateKey', 'keyAlg', 'scope']) {
      if (o[field] !== undefined)
        throw invalidInput(`config.oauth.${field}`, 'is only taken with grant client_credentials');
    }
    return client;
  }
  if (o.keyAlg !== undefined && o.privateKey === undefined)
    throw invalidInput('config.oauth.keyAlg', 'is only taken with privateKey');
  if (o.privateKey !== undefined) {
    if (client.clientSecret !== undefined)
      throw invalidInput('config.oauth.privateKey', 'give clientSecret or privateKey, not both');
    if (typeof o.keyAlg !== 'string' || !(CLIENT_ASSERTION_ALGS as readonly string[]).includes(o.keyAlg)) {
      throw invalidInput(
        'config.oauth.keyAlg',
        `must be one of ${CLIENT_ASSERTION_ALGS.join(', ')} (the algorithm privateKey signs with)`,
      );
    }
    client.keyAlg = o.keyAlg as ClientAssertionAlg;
    client.privateKey = checkAssertionKey(o.privateKey, client.keyAlg);
  } else if (client.clientSecret === undefined) {
    throw invalidInput('config.oauth.clientSecret', 'grant client_credentials needs clientSecret or privateKey');
  }
  if (o.scope !== undefined) {
    if (typeof o.scope !== 'string' || Buffer.byteLength(o.scope) > MAX_SCOPE_BYTES || !SCOPE.test(o.scope)) {
      throw invalidInput(
        'config.oauth.scope',
        `must be space-separated scope tokens, at most ${MAX_SCOPE_BYTES} bytes`,
      );
    }
    client.scope = o.scope;
  }
  return client;
}

/** What each algorithm needs of the key (RFC 7518 §3.1). */
function keyFits(
  alg: ClientAssertionAlg,
  type: string | undefined,
  details: { namedCurve?: string; modulusLength?: number },
): boolean {
  switch (alg) {
    case 'ES256':
      return type === 'ec' && details.namedCurve === 'prime256v1';
    case 'ES384':
      return type === 'ec' && details.namedCurve === 'secp384r1';
    case 'ES512':
      return type === 'ec' && details.namedCurve === 'secp521r1';
    // An RSASSA-PSS-only key (`rsa-pss`) is refused too: the SDK's signer imports plain RSA keys only.
    case 'RS256':
    case 'RS384':
    case 'RS512':
    case 'PS256':
    case 'PS384':
    case 'PS512':
      return type === 'rsa' && (details.modulusLength ?? 0) >= 2048;
  }
}

/**
 * An unencrypted PEM PKCS#8 private key that `alg` can sign with (the SDK's signer imports PKCS#8
 * only): checked here, so that a key that cannot sign is refused before anything is stored.
 */
function checkAssertionKey(raw: unknown, alg: ClientAssertionAlg): string {
  const pkcs8 =
    'must be an unencrypted PEM PKCS#8 private key (-----BEGIN PRIVATE KEY-----; openssl pkcs8 -topk8 -nocrypt converts one)';
  if (typeof raw !== 'string' || raw === '' || Buffer.byteLength(raw) > MAX_PRIVATE_KEY_BYTES) {
    throw invalidInput('config.oauth.privateKey', `must be a PEM string of at most ${MAX_PRIVATE_KEY_BYTES} bytes`);
  }
  const pem = raw.trim();
  if (!pem.startsWith('-----BEGIN PRIVATE KEY-----') || !pem.endsWith('-----END PRIVATE KEY-----'))
    throw invalidInput('config.oauth.privateKey', pkcs8);
  let key;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw invalidInput('config.oauth.privateKey', pkcs8);
  }
  if (!keyFits(alg, key.asymmetricKeyType, key.asymmetricKeyDetails ?? {})) {
    const rsa = alg.startsWith('RS') || alg.startsWith('PS');
    throw invalidInput(
      'config.oauth.privateKey',
      `is not a key ${alg} signs with (${rsa ? 'an RSA (not RSASSA-PSS) key of at least 2048 bits' : `an EC key on the ${alg === 'ES256' ? 'P-256' : alg === 'ES384' ? 'P-384' : 'P-521'} curve`})`,
    );
  }
  return `${pem}\n`;
}

/** The sealed part of a `client_credentials` client besides its secret (kept as the SDK's `client_secret`). */
export interface ClientCredentialsState {
  privateKey?: string;
  keyAlg?: ClientAssertionAlg;
  scope?: string;
}

/**
 * What the registry seals for a pre-registered client: the client information exactly as the SDK
 * takes it, and for `client_credentials` the key and scope (an empty object still says the grant).
 */
export function preRegisteredState(client: PreRegisteredClient): {
  clientInformation: OAuthClientInformationMixed;
  clientCredentials: ClientCredentialsState | undefined;
} {
  const clientInformation = {
    client_id: client.clientId,
    ...(client.clientSecret !== undefined ? { client_secret: client.clientSecret } : {}),
  };
  if (client.grant !== OAuthGrants.clientCredentials) return { clientInformation, clientCredentials: undefined };
  const clientCredentials: ClientCredentialsState = {
    ...(client.privateKey !== undefined ? { privateKey: client.privateKey, keyAlg: client.keyAlg } : {}),
    ...(client.scope !== undefined ? { scope: client.scope } : {}),
  };
  return { clientInformation, clientCredentials };
}

export function storedOAuthClient(client: PreRegisteredClient): StoredOAuthClient {
  const credential =
    client.privateKey !== undefined ? 'private_key' : client.clientSecret !== undefined ? 'client_secret' : undefined;
  return {
    clientId: client.clientId,
    grant: client.grant,
    ...(credential !== undefined ? { credential } : {}),
    ...(client.keyAlg !== undefined ? { keyAlg: client.keyAlg } : {}),
    ...(client.scope !== undefined ? { scope: client.scope } : {}),
  };
}

function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) < 0x20 || s.charCodeAt(i) === 0x7f) return true;
  return false;
}
