import {
  LOCAL_DEV_KEYRING,
  inboundLimits,
  integerSetting,
  nonNegativeNumberSetting,
  onOffSetting,
  parseKeyring,
  parseNatsCredentials,
  parseProfile,
  portSetting,
  refuseDevelopmentKeys,
  type InboundLimits,
  type KeyringEntry,
  type NatsCredentials,
} from '@mcpx/config';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import type { OAuthResourceOptions } from './oauth-resource.js';

/** The endpoint's settings, read once from the environment by main.ts. */
export interface EndpointConfig {
  databaseUrl: string;
  natsUrl: string;
  natsCredentials?: NatsCredentials;
  natsPrefix: string;
  httpPort: number;
  httpHost: string;
  /** `/metrics` and `/healthz` for operators (`INTERNAL_HTTP_PORT`, default 9083; 0 when HTTP_PORT is 0). */
  internalHttpPort: number;
  internalHttpHost: string;
  /** Where clients reach this service (`ENDPOINT_PUBLIC_URL`), e.g. `https://mcp.example.com`; printed by the CLI. */
  publicUrl: string;
  /** `ENDPOINT_ALLOWED_HOSTS`: Host names accepted (DNS rebinding); default loopback names and the public URL's host. */
  allowedHosts: string[];
  /** `ENDPOINT_ALLOWED_ORIGINS`: Origin host names accepted from browsers; default the allowed hosts. */
  allowedOrigins: string[];
  /** `ENDPOINT_CORS_ORIGINS`: exact origins (`https://app.example.com`) given CORS headers; default none. */
  corsOrigins: string[];
  /** `ENDPOINT_PAGE_SIZE`: tools per `tools/list` page (default 100, 1 to 1000). */
  pageSize: number;
  /** Redis, for the shared per-address limit on failed token attempts (`REDIS_URL`, `REDIS_PREFIX`). */
  redisUrl: string;
  redisPrefix: string;
  /** `TRUSTED_PROXIES`: whose `X-Forwarded-For` names the client's address (none by default: the socket's peer). */
  trustedProxies: string[];
  /**
   * `ENDPOINT_TOKEN_FAILURES_PER_ADDRESS` (per second, default 0.2; 0 = no limit) and its `_BURST`
   * (default 20): failed token attempts one client address may make; past them the address is
   * refused with 429 and `Retry-After` before any token is looked at.
   */
  tokenFailuresPerAddress: { ratePerSecond: number; burst: number };
  /**
   * Open notification streams (a 2025 client's GET, a 2026-07-28 `subscriptions/listen`) one
   * instance holds: `ENDPOINT_STREAMS_PER_TOKEN` (default 8), `ENDPOINT_STREAMS_PER_ACCOUNT`
   * (64) and `ENDPOINT_STREAMS_PER_INSTANCE` (4096); past one, 429 (503 for the instance's) with
   * `Retry-After`, naming the limit.
   */
  streams: { perToken: number; perAccount: number; perInstance: number };
  /**
   * Resource subscriptions (a 2025 client's `resources/subscribe`, the URIs of a 2026-07-28
   * `subscriptions/listen`) held on one instance: `ENDPOINT_SUBSCRIPTIONS_PER_TOKEN` (default 100)
   * and `ENDPOINT_SUBSCRIPTIONS_PER_ACCOUNT` (1000); past one, refused naming the limit.
   */
  subscriptions: { perToken: number; perAccount: number };
  /**
   * `SECRETS_KEYRING` (the deployment's, as the other services read it): seals the `requestState`
   * of the approval questions the endpoint asks MCP clients' users, so that any instance opens
   * them. Unset under the local profile (`OUTBOUND_PROFILE=local`, what `npm start` runs): the
   * development key ring the other services use there; the development key is refused outside it.
   * Empty: a key of this process only (a retry must come back to it).
   */
  keyring: KeyringEntry[];
  /** `APPROVAL_TTL_MS`, as the proxy and the registry read it: how long an approved call may be re-sent. */
  approvalTtlMs: number;
  /**
   * `CONSOLE_URL`: where the account owner's console is reached (the registry serves it), the base
   * of the link a refused always_ask call names; default `ENDPOINT_AUTHORIZATION_SERVER` (the
   * registry), else none (the refusal names the approval alone).
   */
  consoleUrl?: string;
  /**
   * The bounds held before a request is admitted (`ENDPOINT_HEADERS_TIMEOUT_MS`, `_BODY_TIMEOUT_MS`,
   * `_KEEPALIVE_TIMEOUT_MS` (default 65 s here, above the usual load balancer's idle 60 s),
   * `_BODY_BUDGET_BYTES`, `_CONNECTIONS_PER_ADDRESS`; `@mcpx/inbound`).
   */
  inbound: InboundLimits;
  /** `ENDPOINT_LEAN_CALLS` (default on; `off`: every request through the SDK's handler). */
  leanCalls: boolean;
  /**
   * OAuth sign-in with the registry as authorization server (`ENDPOINT_AUTHORIZATION_SERVER`, the
   * registry's public URL; its resource URLs on `ENDPOINT_PUBLIC_URL` when set, else on each
   * request's origin). Absent: agent tokens only.
   */
  oauth?: OAuthResourceOptions;
  instanceId: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  otlpEndpoint: string | undefined;
}

export const DEFAULT_ENDPOINT_PORT = 8083;
const DEFAULT_INTERNAL_PORT = 9083;

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The deployment's key ring, as the other services read it (the local profile's development ring when unset there). */
function keyringOf(env: NodeJS.ProcessEnv): KeyringEntry[] {
  const profile = parseProfile(env);
  const keyring = parseKeyring(env.SECRETS_KEYRING || (profile === 'local' ? LOCAL_DEV_KEYRING : undefined));
  refuseDevelopmentKeys(profile, keyring);
  return keyring;
}

/**
 * An http(s) URL from `env[name]`, trimmed and without trailing slashes; undefined when unset or
 * blank. `bare`: no query or fragment either (a base other URLs are built on). A malformed value
 * stops the start, naming the variable.
 */
function httpUrlSetting(env: NodeJS.ProcessEnv, name: string, bare: boolean): string | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const value = raw.replace(/\/+$/, '');
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url === undefined || !/^https?:$/.test(url.protocol))
    throw new Error(
      bare ? `${name} must be an http(s) URL without query or fragment` : `${name} must be an http(s) URL`,
    );
  if (bare && (url.search !== '' || url.hash !== ''))
    throw new Error(`${name} must be an http(s) URL without query or fragment`);
  return value;
}

/**
 * `ENDPOINT_PUBLIC_URL` (read once) and the OAuth settings built on it: with
 * `ENDPOINT_AUTHORIZATION_SERVER` set, both must be bare http(s) URLs.
 */
function publicSettings(env: NodeJS.ProcessEnv, httpPort: number): { publicUrl: string; oauth?: OAuthResourceOptions } {
  const authorizationServer = httpUrlSetting(env, 'ENDPOINT_AUTHORIZATION_SERVER', true);
  const explicit = httpUrlSetting(env, 'ENDPOINT_PUBLIC_URL', authorizationServer !== undefined);
  const publicUrl = explicit ?? `http://127.0.0.1:${httpPort}`;
  if (authorizationServer === undefined) return { publicUrl };
  return { publicUrl, oauth: { authorizationServer, ...(explicit !== undefined ? { publicUrl: explicit } : {}) } };
}

/** A whole number of at least 1 (`name` must be one, else the start stops naming it). */
function countSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  return integerSetting(env, name, { fallback, min: 1, message: `${name} must be a whole number of at least 1` });
}

/** The refused-token budget of one address: a rate (per second; 0 = no limit) and a burst. */
function tokenFailureLimits(env: NodeJS.ProcessEnv): EndpointConfig['tokenFailuresPerAddress'] {
  const ratePerSecond = nonNegativeNumberSetting(
    env,
    'ENDPOINT_TOKEN_FAILURES_PER_ADDRESS',
    0.2,
    'ENDPOINT_TOKEN_FAILURES_PER_ADDRESS must be a non-negative number (per second; 0 = no limit)',
  );
  return { ratePerSecond, burst: countSetting(env, 'ENDPOINT_TOKEN_FAILURES_PER_ADDRESS_BURST', 20) };
}

/** The bounds on open notification streams (`StreamSlots`), each a whole number of at least 1. */
function streamLimits(env: NodeJS.ProcessEnv): EndpointConfig['streams'] {
  const bound = (name: string, fallback: number): number => countSetting(env, name, fallback);
  return {
    perToken: bound('ENDPOINT_STREAMS_PER_TOKEN', 8),
    perAccount: bound('ENDPOINT_STREAMS_PER_ACCOUNT', 64),
    perInstance: bound('ENDPOINT_STREAMS_PER_INSTANCE', 4_096),
  };
}

/** The bounds on resource subscriptions (`Subscriptions`), each a whole number of at least 1. */
function subscriptionLimits(env: NodeJS.ProcessEnv): EndpointConfig['subscriptions'] {
  const bound = (name: string, fallback: number): number => countSetting(env, name, fallback);
  return {
    perToken: bound('ENDPOINT_SUBSCRIPTIONS_PER_TOKEN', 100),
    perAccount: bound('ENDPOINT_SUBSCRIPTIONS_PER_ACCOUNT', 1_000),
  };
}

export function loadEndpointConfig(env: NodeJS.ProcessEnv): EndpointConfig {
  const httpPort = portSetting(env, 'HTTP_PORT', DEFAULT_ENDPOINT_PORT);
  const internalHttpPort = portSetting(env, 'INTERNAL_HTTP_PORT', httpPort === 0 ? 0 : DEFAULT_INTERNAL_PORT);
  if (internalHttpPort !== 0 && internalHttpPort === httpPort)
    throw new Error('INTERNAL_HTTP_PORT must differ from HTTP_PORT');
  const httpHost = env.HTTP_HOST || '127.0.0.1';
  const { publicUrl, oauth } = publicSettings(env, httpPort);
  // IPv6 host names are bracketed in Host headers (`[::1]`), as URL's hostname gives them.
  const publicHost = new URL(publicUrl).hostname;
  const allowedHosts = list(env.ENDPOINT_ALLOWED_HOSTS);
  const hosts = allowedHosts.length > 0 ? allowedHosts : [...new Set(['localhost', '127.0.0.1', '[::1]', publicHost])];
  const origins = list(env.ENDPOINT_ALLOWED_ORIGINS);
  const cors = list(env.ENDPOINT_CORS_ORIGINS);
  for (const o of cors)
    if (!URL.canParse(o) || new URL(o).origin !== o)
      throw new Error('ENDPOINT_CORS_ORIGINS entries must be origins, e.g. https://app.example.com');
  const pageSize = integerSetting(env, 'ENDPOINT_PAGE_SIZE', {
    fallback: 100,
    min: 1,
    max: 1000,
    message: 'ENDPOINT_PAGE_SIZE must be 1 to 1000',
  });
  const streams = streamLimits(env);
  const trustedProxies = list(env.TRUSTED_PROXIES);
  // A malformed entry stops the start, naming it.
  new TrustedProxies(trustedProxies);
  const level = env.LOG_LEVEL ?? 'info';
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error')
    throw new Error('LOG_LEVEL must be debug, info, warn or error');
  const creds = parseNatsCredentials(env);
  const approvalTtlMs = nonNegativeNumberSetting(
    env,
    'APPROVAL_TTL_MS',
    10 * 60_000,
    'APPROVAL_TTL_MS must be a non-negative number of milliseconds',
  );
  const leanCalls = onOffSetting(env, 'ENDPOINT_LEAN_CALLS', true);
  const consoleUrl = httpUrlSetting(env, 'CONSOLE_URL', true) ?? oauth?.authorizationServer;
  return {
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/mcpx',
    natsUrl: env.NATS_URL ?? 'nats://127.0.0.1:4222',
    ...(creds !== undefined ? { natsCredentials: creds } : {}),
    natsPrefix: env.NATS_PREFIX ?? '',
    httpPort,
    httpHost,
    internalHttpPort,
    internalHttpHost: env.INTERNAL_HTTP_HOST || '127.0.0.1',
    publicUrl,
    allowedHosts: hosts,
    // A CORS origin is an allowed origin too.
    allowedOrigins: [...new Set([...(origins.length > 0 ? origins : hosts), ...cors.map((o) => new URL(o).hostname)])],
    corsOrigins: cors,
    pageSize,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: env.REDIS_PREFIX ?? 'mcpx:',
    trustedProxies,
    tokenFailuresPerAddress: tokenFailureLimits(env),
    streams,
    subscriptions: subscriptionLimits(env),
    keyring: keyringOf(env),
    approvalTtlMs: approvalTtlMs || 10 * 60_000,
    leanCalls,
    ...(consoleUrl !== undefined ? { consoleUrl } : {}),
    inbound: inboundLimits(env, 'ENDPOINT', { keepAliveTimeoutMs: 65_000 }),
    ...(oauth !== undefined ? { oauth } : {}),
    instanceId: env.INSTANCE_ID ?? `endpoint-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    logLevel: level,
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
  };
}
