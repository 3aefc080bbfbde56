import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { preRegisteredState, storedOAuthClient, validatePreRegisteredClient } from './oauth-client-config.js';

const ecPem = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

describe('config.oauth', () => {
  it('defaults to the authorization code grant and takes a client credentials client with a secret or a key', () => {
    expect(validatePreRegisteredClient({ clientId: 'a', clientSecret: 's' }, 'oauth')).toEqual({
      clientId: 'a',
      grant: 'authorization_code',
      clientSecret: 's',
    });
    expect(
      validatePreRegisteredClient(
        { clientId: 'a', clientSecret: 's', grant: 'client_credentials', scope: 'x y' },
        'oauth',
      ),
    ).toEqual({
      clientId: 'a',
      grant: 'client_credentials',
      clientSecret: 's',
      scope: 'x y',
    });
    const jwt = validatePreRegisteredClient(
      { clientId: 'a', grant: 'client_credentials', privateKey: `\n${ecPem}\n\n`, keyAlg: 'ES256' },
      'oauth',
    );
    expect(jwt).toEqual({
      clientId: 'a',
      grant: 'client_credentials',
      privateKey: ecPem.trim() + '\n',
      keyAlg: 'ES256',
    });
  });

  it('takes an RSA key for RS* and PS*, not an RSASSA-PSS-only one (the signer cannot import it)', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const pss = generateKeyPairSync('rsa-pss', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    for (const keyAlg of ['RS256', 'PS512']) {
      expect(
        validatePreRegisteredClient({ clientId: 'a', grant: 'client_credentials', privateKey: rsa, keyAlg }, 'oauth')
          ?.keyAlg,
      ).toBe(keyAlg);
    }
    expect(() =>
      validatePreRegisteredClient(
        { clientId: 'a', grant: 'client_credentials', privateKey: pss, keyAlg: 'PS256' },
        'oauth',
      ),
    ).toThrow(/config\.oauth\.privateKey: is not a key PS256 signs with/);
    expect(() =>
      validatePreRegisteredClient(
        { clientId: 'a', grant: 'client_credentials', privateKey: ecPem, keyAlg: 'ES384' },
        'oauth',
      ),
    ).toThrow(/P-384/);
  });

  it('seals the key and scope of a client credentials client; the config keeps which credential is set, never its value', () => {
    const secret = validatePreRegisteredClient(
      { clientId: 'a', clientSecret: 's', grant: 'client_credentials' },
      'oauth',
    )!;
    expect(preRegisteredState(secret)).toEqual({
      clientInformation: { client_id: 'a', client_secret: 's' },
      clientCredentials: {},
    });
    expect(storedOAuthClient(secret)).toEqual({
      clientId: 'a',
      grant: 'client_credentials',
      credential: 'client_secret',
    });
    const key = validatePreRegisteredClient(
      { clientId: 'a', grant: 'client_credentials', privateKey: ecPem, keyAlg: 'ES256', scope: 'mcp' },
      'oauth',
    )!;
    expect(preRegisteredState(key)).toEqual({
      clientInformation: { client_id: 'a' },
      clientCredentials: { privateKey: key.privateKey, keyAlg: 'ES256', scope: 'mcp' },
    });
    expect(storedOAuthClient(key)).toEqual({
      clientId: 'a',
      grant: 'client_credentials',
      credential: 'private_key',
      keyAlg: 'ES256',
      scope: 'mcp',
    });
    expect(JSON.stringify(storedOAuthClient(key))).not.toContain('PRIVATE KEY');
    const code = validatePreRegisteredClient({ clientId: 'a' }, 'oauth')!;
    expect(preRegisteredState(code)).toEqual({ clientInformation: { client_id: 'a' }, clientCredentials: undefined });
    expect(storedOAuthClient(code)).toEqual({ clientId: 'a', grant: 'authorization_code' });
  });
});
