import { inboundLimits, type InboundLimits } from './inbound.js';
import { integerSetting } from './settings.js';

/**
 * The registry's own settings beside the shared ones of `loadConfig` (read once, by its main.ts):
 * - `REGISTRY_REPROBE_BASE_MS`: the base of the re-probe backoff of servers in error (default 5 s);
 * - `REGISTRY_DISCOVERY_CONCURRENCY`: remote discoveries one instance runs at once (default 16);
 * - `REGISTRY_PUBLIC_URL`: where owners' browsers reach it (the OAuth callback; default its listen address);
 * - `REGISTRY_OAUTH_CLIENT_METADATA=off`: no OAuth client ID metadata document, registration only;
 * - `REGISTRY_HEADERS_TIMEOUT_MS`, `_BODY_TIMEOUT_MS`, `_KEEPALIVE_TIMEOUT_MS`, `_BODY_BUDGET_BYTES`,
 *   `_CONNECTIONS_PER_ADDRESS`: the bounds of its HTTP face before a request is known (`inbound`).
 * Absent fields take the registry's defaults.
 */
export interface RegistrySettings {
  reprobeBaseMs?: number;
  discoveryConcurrency?: number;
  publicUrl?: string;
  clientMetadataDocument?: false;
  inbound: InboundLimits;
}

/** Reads the registry's settings; throws a `ConfigError` naming the variable of a malformed value. */
export function loadRegistrySettings(env: NodeJS.ProcessEnv): RegistrySettings {
  const positive = (name: string): number | undefined => integerSetting(env, name, { fallback: undefined, min: 1, message: `${name} must be a positive integer` });
  const reprobeBaseMs = positive('REGISTRY_REPROBE_BASE_MS');
  const discoveryConcurrency = positive('REGISTRY_DISCOVERY_CONCURRENCY');
  return {
    ...(reprobeBaseMs !== undefined ? { reprobeBaseMs } : {}),
    ...(discoveryConcurrency !== undefined ? { discoveryConcurrency } : {}),
    ...(env.REGISTRY_PUBLIC_URL ? { publicUrl: env.REGISTRY_PUBLIC_URL.replace(/\/+$/, '') } : {}),
    ...(env.REGISTRY_OAUTH_CLIENT_METADATA === 'off' ? { clientMetadataDocument: false as const } : {}),
    inbound: inboundLimits(env, 'REGISTRY'),
  };
}
