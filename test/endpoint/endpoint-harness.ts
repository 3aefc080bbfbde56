import { loadEndpointConfig, startEndpoint, type RunningEndpoint } from '@mcpx/endpoint';
import type { Telemetry } from '@mcpx/telemetry';
import { ProxySystem, type ProxySystemOptions } from '../support/proxy-system.js';

export interface EndpointSystem {
  system: ProxySystem;
  endpoint: RunningEndpoint;
  /** `<endpoint>/v1/agents/<agent>/mcp`. */
  urlOf(agent: string): string;
  /** A new token of the agent (CreateAgentToken), as the owner gets it. */
  token(agent: string, fields?: Record<string, unknown>): Promise<{ token: string; id: string }>;
  stop(): Promise<void>;
}

/**
 * A ProxySystem (registry, projector, proxy in this process on real NATS, Postgres and Redis)
 * with the MCP endpoint service in front of it; `endpointEnv` adds the endpoint's own settings,
 * `telemetry` and `logSink` are the endpoint's (default: the system's, and silence).
 * `ENDPOINT_LEAN_CALLS=off` in the test run's environment serves every request through the SDK's
 * handler (the endpoint tests then prove the SDK path alone; by default both paths serve).
 */
export async function startEndpointSystem(opts: ProxySystemOptions & { endpointEnv?: Record<string, string>; telemetry?: Telemetry; logSink?: (line: string) => void } = {}): Promise<EndpointSystem> {
  const system = await ProxySystem.start(opts);
  let endpoint: RunningEndpoint;
  try {
    endpoint = await startEndpoint(
      loadEndpointConfig({
        ...system.env,
        HTTP_PORT: '0',
        INSTANCE_ID: `endpoint-${Math.random().toString(36).slice(2, 8)}`,
        ...(process.env.ENDPOINT_LEAN_CALLS !== undefined ? { ENDPOINT_LEAN_CALLS: process.env.ENDPOINT_LEAN_CALLS } : {}),
        ...opts.endpointEnv,
      }),
      {
        telemetry: opts.telemetry ?? system.telemetry,
        logSink: opts.logSink ?? (() => {}),
      },
    );
  } catch (err) {
    await system.stop();
    throw err;
  }
  return {
    system,
    endpoint,
    urlOf: (agent) => `${endpoint.url}/v1/agents/${encodeURIComponent(agent)}/mcp`,
    token: async (agent, fields = {}) => system.api.act<{ token: string; id: string }>('CreateAgentToken', { agent, ...fields }),
    stop: async () => {
      await endpoint.stop().catch(() => undefined);
      await system.stop();
    },
  };
}
