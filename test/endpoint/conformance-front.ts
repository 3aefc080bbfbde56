import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A forwarding front on loopback that adds `Authorization: Bearer <token>` to every request and
 * passes everything else through as it came (Host and Origin included, so the endpoint's
 * DNS-rebinding checks see what the client sent). The conformance runner has no option for a
 * header of its own; this is the client's side of the token, nothing of the endpoint's.
 * Every response closes its connection: on a loaded machine a client that reuses a kept-alive
 * socket just as the front times it out sees "other side closed" (a flake of the harness, not a
 * finding about the endpoint).
 */
export async function startTokenFront(target: string, token: string): Promise<{ url: string; close(): Promise<void> }> {
  const t = new URL(target);
  const server: Server = createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, { ...r.headers, connection: 'close' });
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
    res.on('close', () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
