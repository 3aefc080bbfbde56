import type { MetricsHandler } from './setup.js';
import { startHealthServer } from './health-server.js';

export interface ServiceHttp {
  /** The public port's base URL: `/healthz` only. */
  url: string;
  /** The internal port's base URL: `/healthz`, `/metrics` and the extra endpoints. */
  internalUrl: string;
  close(): Promise<void>;
}

/**
 * The HTTP side of a service without an API of its own (projector, proxy): `/healthz` on the
 * public address, and `/healthz`, `/metrics` and `extra` (e.g. `/stats`) on the internal one, so
 * that what describes every tenant's traffic is never served where the network reaches.
 */
export async function startServiceHttp(opts: {
  service: string;
  port: number;
  host: string;
  internalPort: number;
  internalHost: string;
  isReady: () => boolean;
  metricsHandler: MetricsHandler;
  extra?: Record<string, () => unknown>;
}): Promise<ServiceHttp> {
  const { service, isReady } = opts;
  const open = await startHealthServer({ port: opts.port, host: opts.host, service, isReady });
  const internal = await startHealthServer({
    port: opts.internalPort,
    host: opts.internalHost,
    service,
    isReady,
    metricsHandler: opts.metricsHandler,
    ...(opts.extra !== undefined ? { extra: opts.extra } : {}),
  }).catch(async (err: unknown) => {
    await open.close();
    throw err;
  });
  return {
    url: open.url,
    internalUrl: internal.url,
    close: async () => {
      await Promise.all([open.close(), internal.close()]);
    },
  };
}
