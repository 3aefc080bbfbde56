import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OAuthClientProvider } from '@modelcontextprotocol/client';
import { runOAuth } from '../oauth.js';

const REFRESH = 'rt/Refresh+3d9c27ab51=Token';
const CLIENT_SECRET = 'cs-Secret-8e02b6f4d1c7';

/**
 * An authorization server whose token endpoint answers a refresh with an error that echoes the
 * refresh token and the client secret it was sent (bare, base64, upper-cased, percent-encoded).
 */
describe('runOAuth scrubs what the authorization server echoes', () => {
  let server: Server;
  let origin = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0];
        const json = (status: number, body: unknown): void =>
          void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (path === '/.well-known/oauth-protected-resource/mcp' || path === '/.well-known/oauth-protected-resource')
          return json(200, { resource: `${origin}/mcp`, authorization_servers: [origin] });
        if (path === '/.well-known/oauth-authorization-server') {
          return json(200, {
            issuer: origin,
            authorization_endpoint: `${origin}/authorize`,
            token_endpoint: `${origin}/token`,
            response_types_supported: ['code'],
            code_challenge_methods_supported: ['S256'],
          });
        }
        if (path === '/token') {
          const form = new URLSearchParams(Buffer.concat(chunks).toString());
          const sent = [
            form.get('refresh_token') ?? '',
            req.headers.authorization ?? '',
            form.get('client_secret') ?? '',
          ].join(' ');
          const echo = `${sent} ${Buffer.from(REFRESH).toString('base64')} ${REFRESH.toUpperCase()} ${encodeURIComponent(CLIENT_SECRET)}`;
          return json(400, { error: 'invalid_request', error_description: `cannot refresh with ${echo}` });
        }
        json(404, {});
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('the thrown error holds no form of the refresh token or the client secret', async () => {
    const provider: OAuthClientProvider = {
      redirectUrl: `${origin}/callback`,
      clientMetadata: { client_name: 't', redirect_uris: [`${origin}/callback`] },
      clientInformation: () => ({ client_id: 'client-1', client_secret: CLIENT_SECRET }),
      saveClientInformation: () => undefined,
      tokens: () => ({ access_token: 'at-Access-5f1e9d7c3b', token_type: 'Bearer', refresh_token: REFRESH }),
      saveTokens: () => undefined,
      redirectToAuthorization: () => undefined,
      saveCodeVerifier: () => undefined,
      codeVerifier: () => 'verifier-unused-0000',
    };
    const err = await runOAuth(provider, { serverUrl: `${origin}/mcp` }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(Error);
    const cause = err?.cause instanceof Error ? err.cause.message : '';
    const text = JSON.stringify({ message: err?.message, stack: err?.stack, cause });
    expect(text).toContain('[redacted]');
    for (const form of [
      REFRESH,
      REFRESH.toUpperCase(),
      Buffer.from(REFRESH).toString('base64'),
      CLIENT_SECRET,
      encodeURIComponent(CLIENT_SECRET),
      '3d9c27ab51',
      '8e02b6f4d1c7',
    ]) {
      expect(text.toLowerCase()).not.toContain(form.toLowerCase());
    }
  });
});
