import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadEndpointConfig, startEndpoint, type RunningEndpoint } from '@mcpx/endpoint';
import type { Telemetry } from '@mcpx/telemetry';
import { approvalTools } from '../approvals/approval-tools.js';
import { startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ProxySystem, type ProxySystemOptions } from '../support/proxy-system.js';

/** The connector's error as a tool result carries it (`_meta['io.mcpx/error']`). */
export type ErrorMeta = { code: string; message: string; details: Record<string, unknown> };

/** The connector's error of a tool result (undefined on a result that has none). */
export const errorOf = (result: { _meta?: Record<string, unknown> }): ErrorMeta =>
  result._meta?.['io.mcpx/error'] as ErrorMeta;

export type EndpointSystemOptions = ProxySystemOptions & {
  endpointEnv?: Record<string, string>;
  telemetry?: Telemetry;
  logSink?: (line: string) => void;
};

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
export async function startEndpointSystem(opts: EndpointSystemOptions = {}): Promise<EndpointSystem> {
  const system = await ProxySystem.start(opts);
  let endpoint: RunningEndpoint;
  try {
    endpoint = await startEndpoint(
      loadEndpointConfig({
        ...system.env,
        HTTP_PORT: '0',
        INSTANCE_ID: `endpoint-${Math.random().toString(36).slice(2, 8)}`,
        ...(process.env.ENDPOINT_LEAN_CALLS !== undefined
          ? { ENDPOINT_LEAN_CALLS: process.env.ENDPOINT_LEAN_CALLS }
          : {}),
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
    token: async (agent, fields = {}) =>
      system.api.act<{ token: string; id: string }>('CreateAgentToken', { agent, ...fields }),
    stop: async () => {
      await endpoint.stop().catch(() => undefined);
      await system.stop();
    },
  };
}

/**
 * The approval suites' system: {@link startEndpointSystem} (`opts` as it takes them) and a modern
 * test server of the approval tools (`drop_table` destructive, `add` read-only, `echo`), set as
 * server `db` and granted to agent `ops` once its three tools are projected. If the server or the
 * agent cannot be set, both are stopped before the error is thrown.
 */
export async function startEndpointApprovalSystem(
  opts: EndpointSystemOptions = {},
): Promise<{ sys: EndpointSystem; upstream: TestMcpServer }> {
  const [sys, upstream] = await Promise.all([
    startEndpointSystem(opts),
    startTestMcpServer({ era: 'modern', tools: approvalTools() }),
  ]);
  try {
    await sys.system.setServer('db', upstream.url);
    await sys.system.createAgent('ops', ['db'], 3);
  } catch (err) {
    await sys.stop();
    await upstream.close();
    throw err;
  }
  return { sys, upstream };
}

/** An SDK v2 client (era probed) connected to `agent`'s endpoint with a new token of the agent. */
export async function connectAgentClient(sys: EndpointSystem, agent: string, name: string): Promise<Client> {
  const { token } = await sys.token(agent);
  const client = new Client({ name, version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(sys.urlOf(agent)), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}
