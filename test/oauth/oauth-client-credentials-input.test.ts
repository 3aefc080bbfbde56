import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import type { InProcessSystem } from '../support/system.js';
import { otherPemForms, pkcs8Pem } from '../support/fixtures/private-keys.js';
import { oauthSystemPerSuite } from '../support/fixtures/suites.js';

/** `config.oauth` of a client credentials server, refused field by field; and `mcpx servers set` for one. */
describe('OAuth client credentials: input and CLI', () => {
  const logLines: string[] = [];
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;

  oauthSystemPerSuite(
    {
      serviceName: 'mcpx-oauth-cc-input',
      authorizationServer: { clientCredentials: { authMethods: ['client_secret_basic', 'private_key_jwt'] } },
      logSink: (line) => logLines.push(line),
    },
    (o) => ({ system, as, upstream } = o),
  );

  it('bad config.oauth is invalid_input naming the field, echoes no secret and stores nothing', async () => {
    const secret = `cc-input-${randomBytes(16).toString('hex')}`;
    const ec = pkcs8Pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
    const p384 = pkcs8Pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsa1024 = pkcs8Pem(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey);
    const { sec1, encrypted } = otherPemForms();
    const publicPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const garbage = `-----BEGIN PRIVATE KEY-----\n${Buffer.from(secret).toString('base64')}\n-----END PRIVATE KEY-----\n`;
    const cc = { clientId: 'cc-bad', grant: 'client_credentials' };
    const cases: Array<[Record<string, unknown>, string, RegExp?]> = [
      [
        { clientId: 'cc-bad', grant: 'password', clientSecret: secret },
        'config.oauth.grant',
        /authorization_code or client_credentials/,
      ],
      [{ ...cc }, 'config.oauth.clientSecret', /needs clientSecret or privateKey/],
      [{ ...cc, clientSecret: 42 }, 'config.oauth.clientSecret'],
      [{ ...cc, clientSecret: secret, privateKey: ec, keyAlg: 'ES256' }, 'config.oauth.privateKey', /not both/],
      [
        { clientId: 'cc-bad', clientSecret: secret, privateKey: ec, keyAlg: 'ES256' },
        'config.oauth.privateKey',
        /only taken with grant client_credentials/,
      ],
      [
        { clientId: 'cc-bad', clientSecret: secret, scope: 'mcp' },
        'config.oauth.scope',
        /only taken with grant client_credentials/,
      ],
      [{ ...cc, privateKey: ec }, 'config.oauth.keyAlg', /must be one of ES256/],
      [{ ...cc, privateKey: ec, keyAlg: 'HS256' }, 'config.oauth.keyAlg'],
      [{ ...cc, clientSecret: secret, keyAlg: 'ES256' }, 'config.oauth.keyAlg', /only taken with privateKey/],
      [{ ...cc, privateKey: 7, keyAlg: 'ES256' }, 'config.oauth.privateKey'],
      [{ ...cc, privateKey: sec1, keyAlg: 'ES256' }, 'config.oauth.privateKey', /PKCS#8/],
      [{ ...cc, privateKey: encrypted, keyAlg: 'ES256' }, 'config.oauth.privateKey', /unencrypted PEM PKCS#8/],
      [{ ...cc, privateKey: publicPem, keyAlg: 'RS256' }, 'config.oauth.privateKey'],
      [{ ...cc, privateKey: garbage, keyAlg: 'ES256' }, 'config.oauth.privateKey'],
      [
        { ...cc, privateKey: pkcs8Pem(rsa.privateKey), keyAlg: 'ES256' },
        'config.oauth.privateKey',
        /not a key ES256 signs with \(an EC key on the P-256 curve\)/,
      ],
      [{ ...cc, privateKey: p384, keyAlg: 'ES256' }, 'config.oauth.privateKey', /P-256/],
      [{ ...cc, privateKey: rsa1024, keyAlg: 'RS256' }, 'config.oauth.privateKey', /at least 2048 bits/],
      [
        {
          ...cc,
          privateKey: pkcs8Pem(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey),
          keyAlg: 'PS256',
        },
        'config.oauth.privateKey',
        /not RSASSA-PSS/,
      ],
      [{ ...cc, clientSecret: secret, scope: 'a  b' }, 'config.oauth.scope'],
      [{ ...cc, clientSecret: secret, scope: 'say "hi"' }, 'config.oauth.scope'],
      [{ ...cc, clientSecret: secret, issuer: 'https://as.example' }, 'config.oauth.issuer', /not a known field/],
    ];
    // The secret, and a line of each key's body: none may show in an error.
    const needles = [
      secret,
      ...[ec, p384, rsa1024, sec1, garbage, pkcs8Pem(rsa.privateKey)].map((pem) => pem.split('\n')[1]!),
    ];
    const api = new ApiClient(system.apiUrl);
    for (const [oauth, field, message] of cases) {
      const err = await api
        .act('SetMcpServer', { name: 'ccbad', config: { url: upstream.url, auth: 'oauth', oauth } })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err, `${field} ${JSON.stringify(Object.keys(oauth))}`).toBeInstanceOf(WireError);
      expect((err as WireError).code).toBe('invalid_input');
      expect((err as WireError).details.field).toBe(field);
      if (message) expect((err as WireError).message).toMatch(message);
      const shown = JSON.stringify((err as WireError).toJSON());
      for (const needle of needles) expect(shown.includes(needle)).toBe(false);
    }
    // With another auth method config.oauth is refused as before.
    await expect(
      api.act('SetMcpServer', {
        name: 'ccbad',
        config: { url: upstream.url, auth: 'bearer', token: 't', oauth: { ...cc, clientSecret: secret } },
      }),
    ).rejects.toThrow(/config\.oauth: is only taken with auth oauth/);
    expect((await api.act('ListMcpServers')).servers).toEqual([]);
    expect(logLines.some((l) => l.includes(secret))).toBe(false);
    const db = createDb(system.env.DATABASE_URL!, { max: 1 });
    try {
      expect(
        await db.selectFrom('registry.mcp_servers').select('id').where('account_id', '=', api.principal).execute(),
      ).toEqual([]);
      expect(
        await db
          .selectFrom('registry.oauth_connections')
          .select('server_id')
          .where('account_id', '=', api.principal)
          .execute(),
      ).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('mcpx servers set … --grant client_credentials with --client-secret or --private-key-file --key-alg connects, shows only that a credential is set', async () => {
    const api = new ApiClient(system.apiUrl);
    const { env, dir } = cliEnvFor(api);
    /** `mcpx servers set NAME <upstream> --auth oauth --client-id ID --grant client_credentials`, then `flags`. */
    const setMachineByCli = (name: string, clientId: string, flags: string[]) =>
      runCli(
        [
          'servers',
          'set',
          name,
          upstream.url,
          '--auth',
          'oauth',
          '--client-id',
          clientId,
          '--grant',
          'client_credentials',
          ...flags,
        ],
        env,
      );

    const secret = `cc-cli-${randomBytes(16).toString('hex')}`;
    as.registerMachineClient('cc-cli', { secret });
    const set = await setMachineByCli('clicc', 'cc-cli', ['--client-secret', secret]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^clicc {2}connected, 2 tools/);
    expect(set.stdout).not.toMatch(/authorize in a browser/);

    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pemFile = join(dir, 'client.pem');
    const pem = pkcs8Pem(privateKey);
    writeFileSync(pemFile, pem, { mode: 0o600 });
    as.registerMachineClient('cc-cli-jwt', { publicKey, alg: 'ES256' });
    const jwt = await setMachineByCli('clijwt', 'cc-cli-jwt', [
      '--private-key-file',
      pemFile,
      '--key-alg',
      'ES256',
      '--json',
    ]);
    expect(jwt.code, jwt.stderr).toBe(0);
    const parsed = JSON.parse(jwt.stdout) as { status: { state: string }; oauthClient: unknown };
    expect(parsed.status.state).toBe('ok');
    expect(parsed.oauthClient).toEqual({
      clientId: 'cc-cli-jwt',
      grant: 'client_credentials',
      hasClientSecret: false,
      hasPrivateKey: true,
      keyAlg: 'ES256',
    });
    const show = await runCli(['servers', 'show', 'clijwt'], env);
    expect(show.stdout).toContain('oauth client: cc-cli-jwt (client_credentials, private key set (ES256))');
    const body = pem.split('\n')[1]!;
    for (const out of [set, jwt, show]) expect(out.stdout + out.stderr).not.toContain(body);
    expect(set.stdout + set.stderr).not.toContain(secret);

    const usage = await setMachineByCli('clibad', 'x', ['--key-alg', 'ES256']);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toMatch(/--private-key-file and --key-alg go together/);
    const mismatch = await setMachineByCli('clibad', 'x', ['--private-key-file', pemFile, '--key-alg', 'RS256']);
    expect(mismatch.code).not.toBe(0);
    expect(mismatch.stderr).toMatch(/config\.oauth\.privateKey: is not a key RS256 signs with/);
    expect(mismatch.stderr).not.toContain(body);
    const authorize = await runCli(['servers', 'authorize', 'clicc'], env);
    expect(authorize.code).not.toBe(0);
    expect(authorize.stderr).toMatch(/client credentials grant: nobody signs in/);
  });
});
