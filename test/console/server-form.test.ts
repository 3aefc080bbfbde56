import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
// The console's own form module, loaded as the browser loads it.
import { MAX_HEADERS, parseHeaderLines, serverConfig } from '../../console/public/server-form.js';
import { otherPemForms, pkcs8Pem } from '../support/fixtures/private-keys.js';

const SECRET = 'v4lue-that-must-not-be-echoed';

describe('custom headers, one per line', () => {
  it('parses Name: value lines, skipping blank ones; the value is everything after the first colon', () => {
    expect(parseHeaderLines('X-Acme-Token: abc123\n\n  X-Tenant:acme  \r\nAuthorization: Basic dTpw:extra')).toEqual({
      headers: { 'X-Acme-Token': 'abc123', 'X-Tenant': 'acme', Authorization: 'Basic dTpw:extra' },
      errors: [],
    });
  });

  it('names the line of every mistake and never repeats a value', () => {
    const text = [
      `X-Ok: ${SECRET}`,
      `no colon ${SECRET}`,
      `: ${SECRET}`,
      `Bad Name: ${SECRET}`,
      `Host: ${SECRET}`,
      `x-ok: ${SECRET}`,
      'X-Empty:   ',
    ].join('\n');
    const { headers, errors } = parseHeaderLines(text);
    expect(headers).toEqual({ 'X-Ok': SECRET });
    expect(errors.map((e) => e.line)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(errors[0]!.message).toContain('no colon');
    expect(errors[2]!.message).toContain('letters, digits and -');
    expect(errors[3]!.message).toContain('set by the transport');
    expect(errors[4]!.message).toContain('already given on line 1');
    expect(errors[5]!.message).toContain('has no value');
    expect(JSON.stringify(errors)).not.toContain(SECRET);
  });

  it('bounds the number of headers and the size of a value', () => {
    const many = Array.from({ length: MAX_HEADERS + 1 }, (_, i) => `X-H${i}: v`).join('\n');
    expect(parseHeaderLines(many).errors).toEqual([{ line: 0, message: `at most ${MAX_HEADERS} headers` }]);
    expect(parseHeaderLines(`X-Big: ${'a'.repeat(4097)}`).errors[0]).toMatchObject({
      line: 1,
      message: expect.stringContaining('4096 bytes'),
    });
  });
});

describe('the add-server form as a SetMcpServer config', () => {
  const url = 'https://mcp.example.com/mcp';

  it('builds each of the four auth methods as the registry takes them', () => {
    expect(serverConfig({ url, auth: 'none' })).toEqual({ config: { url, auth: 'none' }, errors: [] });
    expect(serverConfig({ url, auth: 'oauth', transport: 'sse' })).toEqual({
      config: { url, auth: 'oauth', transport: 'sse' },
      errors: [],
    });
    expect(serverConfig({ url, auth: 'oauth', clientId: 'cid', clientSecret: 's' }).config.oauth).toEqual({
      clientId: 'cid',
      clientSecret: 's',
    });
    expect(serverConfig({ url, auth: 'bearer', token: `  Bearer ${SECRET}\n` })).toEqual({
      config: { url, auth: 'bearer', token: SECRET },
      errors: [],
    });
    // Custom headers are all secret headers: every one is stored encrypted.
    expect(serverConfig({ url, auth: 'headers', headers: 'X-A: 1\nX-B: 2' })).toEqual({
      config: { url, auth: 'headers', secretHeaders: { 'X-A': '1', 'X-B': '2' } },
      errors: [],
    });
  });

  it('names the field of every mistake', () => {
    const fields = (values: Record<string, string>) => serverConfig(values).errors.map((e) => e.field);
    expect(fields({ url: ' ', auth: 'none' })).toEqual(['url']);
    expect(fields({ url, auth: 'basic' })).toEqual(['auth']);
    expect(fields({ url, auth: 'bearer', token: '' })).toEqual(['token']);
    expect(fields({ url, auth: 'bearer', token: 'two words' })).toEqual(['token']);
    expect(fields({ url, auth: 'headers', headers: '\n' })).toEqual(['headers']);
    expect(serverConfig({ url, auth: 'headers', headers: 'X-A: 1\nbroken' }).errors).toEqual([
      { field: 'headers', line: 2, message: 'expected "Name: value" (no colon)' },
    ]);
    expect(fields({ url, auth: 'oauth', clientSecret: 's' })).toEqual(['clientSecret']);
    expect(JSON.stringify(serverConfig({ url, auth: 'bearer', token: `a ${SECRET}` }).errors)).not.toContain(SECRET);
  });
});

describe('an OAuth client as config.oauth', () => {
  const url = 'https://mcp.example.com/mcp';
  const machine = { url, auth: 'oauth', grant: 'client_credentials', clientId: 'svc' };
  const ec = (namedCurve: string) => pkcs8Pem(generateKeyPairSync('ec', { namedCurve }).privateKey);
  const p256 = ec('P-256');
  const p384 = ec('P-384');
  const rsa2048 = pkcs8Pem(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
  /** The base64 of a key: what would show if it leaked into a message. */
  const body = (key: string) =>
    key
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('-----'))
      .join('')
      .slice(0, 40);
  const errorsOf = (values: Record<string, string>) => serverConfig(values).errors;
  const fields = (values: Record<string, string>) => errorsOf(values).map((e) => e.field);

  it('signs in by default; a machine client carries its grant with a secret or a key and a scope', () => {
    expect(serverConfig({ url, auth: 'oauth', grant: 'authorization_code', clientId: ' cid ' })).toEqual({
      config: { url, auth: 'oauth', oauth: { clientId: 'cid' } },
      errors: [],
    });
    expect(serverConfig({ ...machine, clientSecret: SECRET })).toEqual({
      config: { url, auth: 'oauth', oauth: { clientId: 'svc', grant: 'client_credentials', clientSecret: SECRET } },
      errors: [],
    });
    expect(
      serverConfig({
        ...machine,
        credential: 'key',
        privateKey: `\n${p256}\n`,
        keyAlg: 'ES256',
        scope: '  mcp:tools \n files:read ',
      }).config.oauth,
    ).toEqual({
      clientId: 'svc',
      grant: 'client_credentials',
      privateKey: p256.trim(),
      keyAlg: 'ES256',
      scope: 'mcp:tools files:read',
    });
    // Without a choice, whichever credential is filled; the chosen one wins over a leftover other.
    expect(serverConfig({ ...machine, privateKey: rsa2048, keyAlg: 'PS256' }).config.oauth).toMatchObject({
      keyAlg: 'PS256',
      privateKey: rsa2048.trim(),
    });
    expect(
      serverConfig({ ...machine, credential: 'secret', clientSecret: SECRET, privateKey: p256, keyAlg: 'ES256' }).config
        .oauth,
    ).toEqual({
      clientId: 'svc',
      grant: 'client_credentials',
      clientSecret: SECRET,
    });
  });

  it('names the field of every mistake of a machine client', () => {
    expect(fields({ url, auth: 'oauth', grant: 'device_code' })).toEqual(['grant']);
    expect(fields({ ...machine, clientId: '', clientSecret: SECRET })).toEqual(['clientId']);
    expect(fields({ ...machine, clientId: 'a\tb', clientSecret: SECRET })).toEqual(['clientId']);
    expect(fields({ ...machine, clientId: 'x'.repeat(513), clientSecret: SECRET })).toEqual(['clientId']);
    expect(errorsOf(machine)).toEqual([
      { field: 'clientSecret', message: 'paste the client secret (or use a private key)' },
    ]);
    expect(fields({ ...machine, clientSecret: SECRET, privateKey: p256, keyAlg: 'ES256' })).toEqual(['privateKey']);
    expect(fields({ ...machine, clientSecret: 's'.repeat(4097) })).toEqual(['clientSecret']);
    expect(fields({ ...machine, credential: 'key', keyAlg: 'ES256' })).toEqual(['privateKey']);
    expect(fields({ ...machine, credential: 'key', privateKey: p256, keyAlg: 'HS256' })).toEqual(['keyAlg']);
    expect(fields({ ...machine, credential: 'key', privateKey: p256, keyAlg: 'ES256', scope: 'a "b"' })).toEqual([
      'scope',
    ]);
    expect(
      fields({ ...machine, credential: 'key', privateKey: p256, keyAlg: 'ES256', scope: 'x'.repeat(1025) }),
    ).toEqual(['scope']);
    expect(fields({ ...machine, credential: 'both', clientSecret: SECRET })).toEqual(['credential']);
    // A sign-in client takes the same limits.
    expect(fields({ url, auth: 'oauth', clientId: 'cid', clientSecret: 's'.repeat(4097) })).toEqual(['clientSecret']);
  });

  it('checks the key against its algorithm before anything is sent, never quoting the key or the secret', () => {
    const withKey = (privateKey: string, keyAlg = 'ES256') =>
      errorsOf({ ...machine, credential: 'key', privateKey, keyAlg });
    const { sec1, encrypted } = otherPemForms();
    const rsa1024 = pkcs8Pem(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey);
    const ed25519 = pkcs8Pem(generateKeyPairSync('ed25519').privateKey);
    const pss = pkcs8Pem(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey);
    const p521 = ec('P-521');
    const secp256k1 = ec('secp256k1');

    expect(withKey(p256)).toEqual([]);
    expect(withKey(p384, 'ES384')).toEqual([]);
    expect(withKey(p521, 'ES512')).toEqual([]);
    for (const alg of ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']) expect(withKey(rsa2048, alg)).toEqual([]);
    expect(withKey(p384)).toEqual([
      { field: 'keyAlg', message: 'ES256 signs with an EC P-256 key, and the key is an EC P-384 key: pick ES384' },
    ]);
    expect(withKey(rsa2048)).toEqual([
      {
        field: 'keyAlg',
        message:
          'ES256 signs with an EC P-256 key, and the key is a 2048-bit RSA key: pick RS256 or RS384 or RS512 or PS256 or PS384 or PS512',
      },
    ]);
    expect(withKey(p256, 'RS256')[0]).toMatchObject({
      field: 'keyAlg',
      message: expect.stringContaining('pick ES256'),
    });
    expect(withKey(rsa1024, 'RS256')).toEqual([
      {
        field: 'privateKey',
        message:
          'the private key is a 1024-bit RSA key: RS256 signs with an RSA (not RSASSA-PSS) key of at least 2048 bits',
      },
    ]);
    expect(withKey(pss, 'PS256')[0]).toMatchObject({
      field: 'privateKey',
      message: expect.stringContaining('an RSASSA-PSS-only key'),
    });
    expect(withKey(ed25519)[0]).toMatchObject({
      field: 'privateKey',
      message: expect.stringContaining('an Ed25519 key'),
    });
    expect(withKey(secp256k1)[0]).toMatchObject({
      field: 'privateKey',
      message: expect.stringContaining('an EC key on another curve: ES256 signs with an EC P-256 key'),
    });
    expect(withKey(sec1)[0]).toMatchObject({
      field: 'privateKey',
      message: expect.stringContaining('traditional EC key, not PKCS#8'),
    });
    expect(withKey(encrypted)[0]).toMatchObject({
      field: 'privateKey',
      message: expect.stringContaining('is encrypted'),
    });
    const mangled = p256.replace(/\n(.{10})/, '\n!!$1');
    const truncated = p256
      .split('\n')
      .filter((_, i) => i !== 2)
      .join('\n');
    for (const bad of [
      SECRET,
      mangled,
      truncated,
      `${p256}${p256}`,
      '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----',
    ]) {
      expect(withKey(bad)).toEqual([
        { field: 'privateKey', message: expect.stringContaining('must be an unencrypted PEM PKCS#8 private key') },
      ]);
    }
    expect(withKey(`${p256}${'x'.repeat(16 * 1024)}`)).toEqual([
      { field: 'privateKey', message: 'the private key is longer than 16384 bytes' },
    ]);

    const all = [rsa2048, rsa1024, pss, ed25519, p384, sec1, encrypted, mangled, SECRET].flatMap((k) => [
      ...withKey(k),
      ...withKey(k, 'RS256'),
    ]);
    all.push(
      ...errorsOf({ ...machine, clientSecret: SECRET, privateKey: p256 }),
      ...errorsOf({ ...machine, clientId: '', clientSecret: SECRET }),
    );
    const text = JSON.stringify(all);
    for (const k of [rsa2048, rsa1024, pss, ed25519, p384, p256, sec1, encrypted]) expect(text).not.toContain(body(k));
    expect(text).not.toContain(SECRET);
  });
});
