import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What a misbehaving OAuth-protected server hands out:
 * - `mismatch`: protected-resource metadata naming another `resource` than the server's URL;
 * - `oversized`: authorization-server metadata larger than 64 KiB (streamed, no length header);
 * - `malformed`: authorization-server metadata that does not match RFC 8414 (`issuer` a number);
 * - `not-json`: authorization-server metadata that is not JSON.
 */
export type BadOAuthMode = 'mismatch' | 'oversized' | 'malformed' | 'not-json';

export interface BadOAuthServer {
  /** The MCP endpoint, `http://127.0.0.1:PORT/mcp`: every request is a 401 naming the metadata. */
  url: string;
  /** The `resource_metadata` URL of its challenge (not a well-known path, so it must be followed). */
  resourceMetadataUrl: string;
  /** Paths requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Starts an MCP endpoint that answers 401 with OAuth metadata that is wrong in `mode`'s way. */
export async function startBadOAuthServer(mode: BadOAuthMode): Promise<BadOAuthServer> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  let origin = '';
  const json = (res: ServerResponse, body: string): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    requests.push(`${req.method} ${path}`);
    req.resume();
    if (path === '/mcp') {
      res.writeHead(401, {
        'www-authenticate': `Bearer resource_metadata="${origin}/meta/prm"`,
        'content-type': 'application/json',
      });
      res.end('{"error":"unauthorized"}');
    } else if (path === '/meta/prm') {
      json(
        res,
        JSON.stringify({
          resource: mode === 'mismatch' ? 'https://elsewhere.example/mcp' : `${origin}/mcp`,
          authorization_servers: [`${origin}/`],
        }),
      );
    } else if (path === '/.well-known/oauth-authorization-server' || path === '/.well-known/openid-configuration') {
      const good = {
        issuer: `${origin}/`,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        registration_endpoint: `${origin}/register`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
      };
      if (mode === 'malformed') json(res, JSON.stringify({ ...good, issuer: 42 }));
      else if (mode === 'not-json') json(res, '{"issuer": "unterminated');
      else if (mode === 'oversized') {
        // Chunked, so only the reader's own count can stop it.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`{"issuer":"${origin}/","padding":"`);
        for (let i = 0; i < 40; i++) res.write('x'.repeat(4096));
        res.end('"}');
      } else json(res, JSON.stringify(good));
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not_found"}');
    }
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  origin = `http://127.0.0.1:${addr.port}`;
  return {
    url: `${origin}/mcp`,
    resourceMetadataUrl: `${origin}/meta/prm`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
