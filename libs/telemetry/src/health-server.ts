import { createServer, type Server } from 'node:http';
import type { MetricsHandler } from './setup.js';

/**
 * A service's small HTTP server: `GET /healthz` (200 once ready, 503 before and while stopping),
 * plus `GET /metrics` when given a `metricsHandler` and the `extra` JSON endpoints. A service runs
 * one on its public port with `/healthz` alone and one on its internal port with everything:
 * metrics and stats describe every tenant's traffic, so they are for operators, not the network.
 */
export async function startHealthServer(opts: {
  port: number;
  host: string;
  service: string;
  isReady: () => boolean;
  /** Serves `GET /metrics`; unset: `/metrics` is 404 (the public port). */
  metricsHandler?: MetricsHandler;
  /** Extra read-only JSON endpoints, e.g. `/stats`. */
  extra?: Record<string, () => unknown>;
}): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/healthz') {
      const ready = opts.isReady();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: ready, service: opts.service }));
    } else if (req.method === 'GET' && path === '/metrics' && opts.metricsHandler !== undefined) {
      opts.metricsHandler(req, res);
    } else if (req.method === 'GET' && opts.extra && Object.hasOwn(opts.extra, path)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(opts.extra[path]?.()));
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : opts.port;
  return {
    server,
    url: `http://${opts.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A service's internal port from its settings (`INTERNAL_HTTP_PORT`, `INTERNAL_HTTP_HOST`): `/healthz`
 * and its telemetry's `/metrics`, which describe every account's traffic and so never go on the public port.
 */
export function startInternalServer(
  service: string,
  settings: { internalHttpPort: number; internalHttpHost: string },
  telemetry: { metricsHandler: MetricsHandler },
  isReady: () => boolean,
): ReturnType<typeof startHealthServer> {
  return startHealthServer({
    port: settings.internalHttpPort,
    host: settings.internalHttpHost,
    service,
    isReady,
    metricsHandler: telemetry.metricsHandler,
  });
}
