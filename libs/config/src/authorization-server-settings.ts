import type { OutboundPolicy } from './config.js';
import { ConfigError } from './config-error.js';
import { inboundLimits, type InboundLimits } from './inbound.js';
import { parseInternalHttp } from './internal-http.js';
import { parseProfile } from './profile.js';
import { parseQuotas, type QuotaSettings } from './quotas.js';
import { portSetting } from './settings.js';

/** The authorization server's public port by default (the registry's 8080, the endpoint's 8083). */
export const DEFAULT_AUTHORIZATION_SERVER_PORT = 8084;

/**
 * What the agent endpoint's authorization server (`@mcpx/authorization-server`) is started with.
 * Nothing of the key ring and nothing of NATS: it holds neither.
 */
export interface AuthorizationServerSettings {
  /** `AUTHORIZATION_SERVER_DATABASE_URL`, else `DATABASE_URL`: its login (its own role in production). */
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  httpPort: number;
  httpHost: string;
  internalHttpPort: number;
  internalHttpHost: string;
  /** `AUTHORIZATION_SERVER_PUBLIC_URL`: the issuer (absent: the address it listens on). */
  publicUrl?: string;
  /** `REGISTRY_PUBLIC_URL`: where the console is, to which a sign-in sends the browser (absent: the issuer's origin). */
  consoleUrl?: string;
  outbound: OutboundPolicy;
  quotas: QuotaSettings;
  /** `TRUSTED_PROXIES`: whose `X-Forwarded-For` the per-address limits believe. */
  trustedProxies: string[];
  /** `AUTHORIZATION_SERVER_HEADERS_TIMEOUT_MS` and the other bounds of its face (`inboundLimits`). */
  inbound: InboundLimits;
  otlpEndpoint?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  instanceId: string;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** An http(s) base URL without a trailing slash, query or fragment; else a `ConfigError` naming `name`. */
function baseUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (
    url === undefined ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.search !== '' ||
    url.hash !== ''
  )
    throw new ConfigError(name, `${name} must be an http(s) URL without a query or fragment`);
  return url.href.replace(/\/+$/, '');
}

/** Reads the authorization server's settings; throws a `ConfigError` naming the variable of a malformed value. */
export function loadAuthorizationServerSettings(env: NodeJS.ProcessEnv): AuthorizationServerSettings {
  const level = env.LOG_LEVEL ?? 'info';
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error')
    throw new ConfigError('LOG_LEVEL', 'LOG_LEVEL must be debug, info, warn or error');
  const httpPort = portSetting(env, 'HTTP_PORT', DEFAULT_AUTHORIZATION_SERVER_PORT);
  const publicUrl = baseUrl(env, 'AUTHORIZATION_SERVER_PUBLIC_URL');
  const consoleUrl = baseUrl(env, 'REGISTRY_PUBLIC_URL');
  return {
    databaseUrl: env.AUTHORIZATION_SERVER_DATABASE_URL || env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/mcpx',
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: env.REDIS_PREFIX ?? 'mcpx:',
    httpPort,
    httpHost: env.HTTP_HOST ?? '127.0.0.1',
    ...parseInternalHttp('authorization-server', env, httpPort),
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    ...(consoleUrl !== undefined ? { consoleUrl } : {}),
    outbound: {
      profile: parseProfile(env),
      allowHttpHosts: list(env.OUTBOUND_ALLOW_HTTP_HOSTS),
      allowPrivate: list(env.OUTBOUND_ALLOW_PRIVATE),
    },
    quotas: parseQuotas(env),
    trustedProxies: list(env.TRUSTED_PROXIES),
    inbound: inboundLimits(env, 'AUTHORIZATION_SERVER'),
    ...(env.OTEL_EXPORTER_OTLP_ENDPOINT ? { otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT } : {}),
    logLevel: level,
    instanceId: env.INSTANCE_ID ?? `authorization-server-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
  };
}
