import { ConfigError } from './config-error.js';
import { portSetting } from './settings.js';

/** The internal ports' defaults: `/healthz`, `/metrics` and `/stats` for operators and scrapers. */
const DEFAULT_INTERNAL_PORTS = { registry: 9080, projector: 9081, proxy: 9082, 'authorization-server': 9084 } as const;

export interface InternalHttp {
  internalHttpPort: number;
  internalHttpHost: string;
}

/**
 * Reads `INTERNAL_HTTP_PORT` and `INTERNAL_HTTP_HOST`: where a service serves `/metrics`, `/stats`
 * and `/healthz` away from its public port. Unset or empty, the port is the service's default,
 * except when `HTTP_PORT` is 0 (a free port): then it is 0 too, so that instances started side by
 * side (tests) do not fight over one fixed port. The host defaults to loopback: a deployment that
 * scrapes from elsewhere opens it explicitly.
 */
export function parseInternalHttp(
  service: keyof typeof DEFAULT_INTERNAL_PORTS,
  env: NodeJS.ProcessEnv,
  httpPort: number,
): InternalHttp {
  const port = portSetting(env, 'INTERNAL_HTTP_PORT', httpPort === 0 ? 0 : DEFAULT_INTERNAL_PORTS[service]);
  if (port !== 0 && port === httpPort)
    throw new ConfigError('INTERNAL_HTTP_PORT', 'INTERNAL_HTTP_PORT must differ from HTTP_PORT');
  const host =
    env.INTERNAL_HTTP_HOST === undefined || env.INTERNAL_HTTP_HOST === '' ? '127.0.0.1' : env.INTERNAL_HTTP_HOST;
  return { internalHttpPort: port, internalHttpHost: host };
}
