import { loadEndpointConfig, startEndpoint, type RunningEndpoint } from '@mcpx/endpoint';
import { ProxySystem } from '../support/proxy-system.js';

/** The endpoint's two ways of serving a call: the lean path, and the SDK's handler alone. */
export type Path = 'lean' | 'sdk';

/**
 * A system (registry, projector, proxy on real NATS, Postgres, Redis) with two endpoints in front:
 * one serving calls on the lean path, one through the SDK's handler only (`ENDPOINT_LEAN_CALLS=off`),
 * each with `CONSOLE_URL` set to the registry (which serves the console).
 */
export async function startApprovalEndpoints(): Promise<{
  system: ProxySystem;
  endpoints: Record<Path, RunningEndpoint>;
  consoleUrl: string;
  stop: () => Promise<void>;
}> {
  const system = await ProxySystem.start();
  const consoleUrl = system.api.apiUrl.replace(/\/+$/, '');
  const endpoints: Partial<Record<Path, RunningEndpoint>> = {};
  try {
    for (const path of ['lean', 'sdk'] as const) {
      endpoints[path] = await startEndpoint(
        loadEndpointConfig({
          ...system.env,
          HTTP_PORT: '0',
          INSTANCE_ID: `endpoint-${path}-${Math.random().toString(36).slice(2, 8)}`,
          ENDPOINT_LEAN_CALLS: path === 'lean' ? 'on' : 'off',
          CONSOLE_URL: consoleUrl,
        }),
        { telemetry: system.telemetry, logSink: () => {} },
      );
    }
  } catch (err) {
    for (const e of Object.values(endpoints)) await e.stop().catch(() => undefined);
    await system.stop();
    throw err;
  }
  const all = endpoints as Record<Path, RunningEndpoint>;
  return {
    system,
    endpoints: all,
    consoleUrl,
    stop: async () => {
      for (const e of Object.values(all)) await e.stop().catch(() => undefined);
      await system.stop();
    },
  };
}
