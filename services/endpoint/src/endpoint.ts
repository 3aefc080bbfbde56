import { TaskClient } from '@mcpx/proxy-client';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { makeSubjects } from '@mcpx/contracts';
import { endpointReads } from '@mcpx/stored';
import { createDb } from '@mcpx/db';
import { createLogger, type Logger, type LogSink } from '@mcpx/log';
import { serviceTelemetry, spanIds, startInternalServer, type Telemetry } from '@mcpx/telemetry';
import { AgentServers, SERVER_NAME } from './agent-server.js';
import { LogLevels } from './log-levels.js';
import { AgentTokens } from './agent-tokens.js';
import type { EndpointConfig } from './config.js';
import { endpointHandler, type EndpointHandler } from './http.js';
import { ToolSets } from './tool-sets.js';
import { LegacySubscriptions } from './legacy-subscriptions.js';
import { Subscriptions } from './subscriptions.js';
import { UpstreamHolds } from './upstream-holds.js';
import { TaskStatusRelay } from './task-status.js';
import {
  connectNats,
  connectRedis,
  instanceToken,
  leanCalls,
  listenPublic,
  tokenFailures,
  userApprovals,
} from './wiring.js';

export { loadEndpointConfig, DEFAULT_ENDPOINT_PORT } from './config.js';
export type { EndpointConfig } from './config.js';
export { META_APPROVAL_ID, META_ERROR } from './call-result.js';
export { LIST_TTL_MS, SERVER_NAME } from './agent-server.js';

export interface EndpointOptions {
  telemetry?: Telemetry;
  logSink?: LogSink;
}

export interface RunningEndpoint {
  /** Where it listens: `<url>/v1/agents/<agent>/mcp`, `<url>/healthz`. */
  url: string;
  /** `/healthz` and `/metrics` for operators. */
  internalUrl: string;
  stop(): Promise<void>;
}

const VERSION = '0.1.0';

/** The endpoint's connections and the parts that read through them (./wiring.ts builds each). */
async function openParts(config: EndpointConfig, instance: string, log: Logger, telemetry: Telemetry) {
  const db = createDb(config.databaseUrl, {
    applicationName: 'endpoint',
    max: 10,
    onIdleError: (err) => log.warn('database connection dropped', { err }),
  });
  // Reads only, of the four tables the endpoint may read.
  const reads = endpointReads(db);
  const subjects = makeSubjects(config.natsPrefix);
  const runtime = await connectNats(config, instance, log, telemetry.meter);
  const redis = await connectRedis(config, log);
  const failures = tokenFailures(redis, config, log);
  const tokens = new AgentTokens(reads, config.databaseUrl, log);
  await tokens.start();
  const toolSets = new ToolSets(reads);
  toolSets.listen(runtime.nc, subjects, log);
  // Resource subscriptions and the servers' list changes, held upstream by the proxy (docs/endpoint.md#subscriptions).
  const holds = new UpstreamHolds({
    nc: runtime.nc,
    subjects,
    instance,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    log,
  });
  holds.start();
  const subscriptions = new Subscriptions(holds, toolSets, config.subscriptions);
  const legacySubscriptions = new LegacySubscriptions(subscriptions);
  // The log level each token's 2025 client set (logging/setLevel), across instances.
  const logLevels = new LogLevels({ nc: runtime.nc, subjects, instance, redis, redisPrefix: config.redisPrefix, log });
  logLevels.listen();
  await runtime.nc.flush();
  return {
    db,
    subjects,
    runtime,
    redis,
    failures,
    tokens,
    toolSets,
    holds,
    subscriptions,
    legacySubscriptions,
    logLevels,
  };
}

type Parts = Awaited<ReturnType<typeof openParts>>;

/** The agents' MCP servers (the SDK's path) and the request handler in front of them. */
function serveParts(
  config: EndpointConfig,
  log: Logger,
  telemetry: Telemetry,
  p: Parts,
  isReady: () => boolean,
): { servers: AgentServers; handler: EndpointHandler } {
  const { runtime, subjects, toolSets } = p;
  const taskStatus = new TaskStatusRelay({ nc: runtime.nc, subjects, ...telemetry });
  const servers = new AgentServers({
    logLevels: p.logLevels,
    legacySubscriptions: p.legacySubscriptions,
    taskStatus,
    approvals: userApprovals({ config, redis: p.redis, nc: runtime.nc, subjects, log }),
    toolSets,
    proxy: runtime.client,
    tasks: new TaskClient(runtime.nc, subjects),
    ...telemetry,
    pageSize: config.pageSize,
    version: VERSION,
    onError: (err, span) => log.warn('mcp request failed', { err, ...spanIds(span) }),
  });
  const handler = endpointHandler(
    {
      tokens: p.tokens,
      servers,
      toolSets,
      failures: p.failures,
      subscriptions: p.subscriptions,
      legacySubscriptions: p.legacySubscriptions,
      taskStatus,
    },
    {
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
      corsOrigins: config.corsOrigins,
      isReady,
      streams: config.streams,
      ...(config.oauth ? { oauth: config.oauth } : {}),
    },
  );
  return { servers, handler };
}

/**
 * The MCP endpoint service: every agent's tools as an MCP server at `/v1/agents/<agent>/mcp`
 * (both protocol eras), for clients outside the platform. A NATS client of the proxy on its own
 * user (`endpoint`, docs/bus.md#users: the runtime's rights to call, read `agents.tools.changed.>`,
 * announce a decision its clients' users take and ask the registry to audit it, and reach its
 * other instances), a read-only reader of the agent tokens, grants and tool documents in Postgres
 * (`EndpointReads`); it scales with the proxies. Its parts are built in ./wiring.ts.
 */
export async function startEndpoint(config: EndpointConfig, opts: EndpointOptions = {}): Promise<RunningEndpoint> {
  // A malformed TRUSTED_PROXIES stops the start before anything is opened.
  const trusted = new TrustedProxies(config.trustedProxies);
  const instance = instanceToken(config.instanceId);
  const log = createLogger('endpoint', {
    level: config.logLevel,
    fields: { instance },
    ...(opts.logSink ? { sink: opts.logSink } : {}),
  });
  const telemetry = await serviceTelemetry(opts.telemetry, 'endpoint', instance, config.otlpEndpoint);
  const p = await openParts(config, instance, log, telemetry);
  let ready = false;
  const { servers, handler } = serveParts(config, log, telemetry, p, () => ready);
  const serverInfo = { name: SERVER_NAME, version: VERSION };
  const lean = leanCalls({
    config,
    instance,
    nc: p.runtime.nc,
    subjects: p.subjects,
    redis: p.redis,
    log,
    toolSets: p.toolSets,
    failures: p.failures,
    servers,
    serverInfo,
  });
  const refused = (reason: string): void => servers.refused(reason);
  const http = await listenPublic({ config, trusted, handler, lean, log, meter: telemetry.meter, refused });
  const internal = await startInternalServer('endpoint', config, telemetry, () => ready);
  ready = true;
  log.info('endpoint ready', {
    url: http.url,
    internal: internal.url,
    publicUrl: config.publicUrl,
    allowedHosts: config.allowedHosts,
    cors: config.corsOrigins,
  });
  let stopping: Promise<void> | undefined;
  return {
    url: http.url,
    internalUrl: internal.url,
    stop: () =>
      (stopping ??= (async () => {
        ready = false;
        lean?.close();
        p.logLevels.close();
        await servers.close();
        p.legacySubscriptions.close();
        await p.holds.close();
        await http.close();
        await internal.close();
        p.toolSets.close();
        await p.tokens.close();
        await p.runtime.close();
        p.redis.disconnect();
        await p.db.destroy();
        if (opts.telemetry === undefined) await telemetry.shutdown();
      })()),
  };
}
