import { inboundLimits, type InboundLimits } from './inbound.js';
import { ConfigError } from './config-error.js';
import { integerSetting } from './settings.js';

/**
 * The registry's own settings beside the shared ones of `loadConfig` (read once, by its main.ts):
 * - `REGISTRY_REPROBE_BASE_MS`: the base of the re-probe backoff of servers in error (default 5 s);
 * - `REGISTRY_DISCOVERY_CONCURRENCY`: remote discoveries one instance runs at once (default 16);
 * - `REGISTRY_PUBLIC_URL`: where owners' browsers reach it (the OAuth callback; default its listen address);
 * - `ENDPOINT_PUBLIC_URL`, `ENDPOINT_PORT`: where MCP clients reach the agent endpoint, which the
 *   console shows (its URL and client configs); absent, the console's own host on `ENDPOINT_PORT`
 *   (default 8083);
 * - `REGISTRY_OAUTH_CLIENT_METADATA=off`: no OAuth client ID metadata document, registration only;
 * - `AUTHORIZATION_SERVER_PUBLIC_URL`: the agent endpoint's authorization server (its own process)
 *   when it has an origin of its own: DecideSignIn's continue link is built on it (absent: a path
 *   on the registry's origin, whose front routes the authorization server's paths to it);
 * - `REGISTRY_HEADERS_TIMEOUT_MS`, `_BODY_TIMEOUT_MS`, `_KEEPALIVE_TIMEOUT_MS`, `_BODY_BUDGET_BYTES`,
 *   `_CONNECTIONS_PER_ADDRESS`: the bounds of its HTTP face before a request is known (`inbound`).
 * Absent fields take the registry's defaults.
 */
export interface RegistrySettings {
  reprobeBaseMs?: number;
  discoveryConcurrency?: number;
  publicUrl?: string;
  clientMetadataDocument?: false;
  authorizationServerUrl?: string;
  /** The agent endpoint as the console shows it: its public URL, else its port on the console's host. */
  endpoint: { publicUrl?: string; port?: number };
  inbound: InboundLimits;
}

/** Reads the registry's settings; throws a `ConfigError` naming the variable of a malformed value. */
export function loadRegistrySettings(env: NodeJS.ProcessEnv): RegistrySettings {
  const positive = (name: string): number | undefined =>
    integerSetting(env, name, { fallback: undefined, min: 1, message: `${name} must be a positive integer` });
  const reprobeBaseMs = positive('REGISTRY_REPROBE_BASE_MS');
  const discoveryConcurrency = positive('REGISTRY_DISCOVERY_CONCURRENCY');
  const endpointPort = integerSetting(env, 'ENDPOINT_PORT', {
    fallback: undefined,
    min: 1,
    max: 65_535,
    message: 'ENDPOINT_PORT must be a port (1-65535)',
  });
  const asUrl = env.AUTHORIZATION_SERVER_PUBLIC_URL
    ? httpUrl(env.AUTHORIZATION_SERVER_PUBLIC_URL, 'AUTHORIZATION_SERVER_PUBLIC_URL')
    : undefined;
  const endpointUrl = env.ENDPOINT_PUBLIC_URL ? httpUrl(env.ENDPOINT_PUBLIC_URL, 'ENDPOINT_PUBLIC_URL') : undefined;
  return {
    ...(reprobeBaseMs !== undefined ? { reprobeBaseMs } : {}),
    ...(discoveryConcurrency !== undefined ? { discoveryConcurrency } : {}),
    ...(env.REGISTRY_PUBLIC_URL ? { publicUrl: env.REGISTRY_PUBLIC_URL.replace(/\/+$/, '') } : {}),
    ...(env.REGISTRY_OAUTH_CLIENT_METADATA === 'off' ? { clientMetadataDocument: false as const } : {}),
    ...(asUrl !== undefined ? { authorizationServerUrl: asUrl } : {}),
    endpoint: {
      ...(endpointUrl !== undefined ? { publicUrl: endpointUrl } : {}),
      ...(endpointPort !== undefined ? { port: endpointPort } : {}),
    },
    inbound: inboundLimits(env, 'REGISTRY'),
  };
}

/** An http(s) base URL without a trailing slash, query or fragment; else a `ConfigError` naming `name`. */
function httpUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `${name} must be an http(s) URL`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '')
    throw new ConfigError(name, `${name} must be an http(s) URL without a query or fragment`);
  return url.href.replace(/\/+$/, '');
}
