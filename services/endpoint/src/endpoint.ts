import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { makeSubjects } from '@mcpx/contracts';
import { endpointReads } from '@mcpx/credentials';
import { createDb } from '@mcpx/db';
import { ApprovalStore, RateLimiter } from '@mcpx/locks';
import { createLogger, type LogSink } from '@mcpx/log';
import { connectRuntime } from '@mcpx/proxy-client';
import { setupTelemetry, startHealthServer, type Telemetry } from '@mcpx/telemetry';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { notify, retryStartup } from '@mcpx/bus';
import { Redis } from 'ioredis';
import { AgentServers, SERVER_NAME } from './agent-server.js';
import { AgentTokens } from './agent-tokens.js';
import { DecisionAudit } from './decision-audit.js';
import type { EndpointConfig } from './config.js';
import { endpointFetch } from './http.js';
import { LeanCalls } from './lean-calls.js';
import { LegacyClients } from './legacy-clients.js';
import { TokenFailures } from './token-failures.js';
import { ToolSets } from './tool-sets.js';
import { UserApprovals } from './user-approvals.js';
import { serveWithBody } from './web-fallback.js';

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

/**
 * The MCP endpoint service: every agent's tools as an MCP server at `/v1/agents/<agent>/mcp`
 * (both protocol eras), for clients outside the platform. A NATS client of the proxy on its own
 * user (`endpoint`, docs/bus.md#users: the runtime's rights to call, read `agents.tools.changed.>`,
 * announce a decision its clients' users take, and reach its other instances), a read-only
 * reader of the agent tokens, grants and tool documents in Postgres; it scales with the proxies.
 */
export async function startEndpoint(config: EndpointConfig, opts: EndpointOptions = {}): Promise<RunningEndpoint> {
  // A malformed TRUSTED_PROXIES stops the start before anything is opened.
  const trusted = new TrustedProxies(config.trustedProxies);
  const instance = config.instanceId.replace(/[^A-Za-z0-9_-]/g, '_');
  const log = createLogger('endpoint', { level: config.logLevel, fields: { instance }, ...(opts.logSink ? { sink: opts.logSink } : {}) });
  const telemetry = opts.telemetry ?? (await setupTelemetry({ serviceName: 'endpoint', serviceInstanceId: instance, ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}) }));
  const db = createDb(config.databaseUrl, { applicationName: 'endpoint', max: 10, onIdleError: (err) => log.warn('database connection dropped', { err }) });
  const subjects = makeSubjects(config.natsPrefix);
  // The runtime's connection (connectRuntime: no async stack traces per request, its user's own
  // inbox, no JetStream) on the endpoint's own user; a node not listening yet is waited for, with
  // backoff and bounded, like every service.
  const creds = config.natsCredentials;
  const runtime = await retryStartup(
    'connect',
    () =>
      connectRuntime({
        url: config.natsUrl,
        prefix: config.natsPrefix,
        name: `endpoint ${instance}`,
        meter: telemetry.meter,
        ...(creds ? { credentials: { user: creds.user, pass: creds.pass } } : {}),
      }),
    { log },
  );
  // The failed-token limit must not queue behind a Redis outage: fail fast (and open) instead.
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1_000, lazyConnect: true });
  redis.on('error', () => {});
  await redis.connect().catch((err: unknown) => log.warn('redis unavailable: the failed-token limit admits until it answers', { err: err as Error }));
  let lastLimitWarning = 0;
  const failures = new TokenFailures(
    new RateLimiter(redis, config.redisPrefix, {
      onError: (err) => {
        if (Date.now() - lastLimitWarning < 10_000) return;
        lastLimitWarning = Date.now();
        log.warn('failed-token limit unavailable, admitting', { err });
      },
    }),
    config.tokenFailuresPerAddress,
  );
  const tokens = new AgentTokens(db, config.databaseUrl, log);
  await tokens.start();
  const toolSets = new ToolSets(endpointReads(db));
  toolSets.listen(runtime.nc, subjects, log);
  await runtime.nc.flush();
  // Approvals by the client's user: decided in the store the owner's decisions use.
  const approvals = new UserApprovals({
    store: new ApprovalStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs }),
    audit: new DecisionAudit({ nc: runtime.nc, subjects, log }),
    keyring: config.keyring,
    log,
    announce: (event) => notify(runtime.nc, subjects.approvalDecided(event.account), event),
  });
  if (config.keyring.length === 0) log.warn('SECRETS_KEYRING unset: approval questions are sealed with a key of this instance only');
  const servers = new AgentServers({
    approvals,
    toolSets,
    proxy: runtime.client,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    pageSize: config.pageSize,
    version: VERSION,
    onError: (err) => log.warn('mcp request failed', { err }),
  });
  let ready = false;
  const fetch = endpointFetch(
    { tokens, servers, toolSets, failures },
    { allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins, corsOrigins: config.corsOrigins, isReady: () => ready },
  );
  const nodeOpts = { onerror: (err: Error) => log.warn('endpoint request failed', { err }) };
  // Single tools/call requests the SDK would take as they are: answered beside it (same bytes).
  const lean = config.leanCalls
    ? new LeanCalls({
        tokens,
        toolSets,
        failures,
        calls: servers.calls,
        clients: new LegacyClients({ nc: runtime.nc, subjects, instance, redis, redisPrefix: config.redisPrefix, log }),
        allowedHosts: config.allowedHosts,
        serverInfo: { name: SERVER_NAME, version: VERSION },
        onError: (err) => log.warn('mcp request failed', { err }),
      })
    : undefined;
  // The client's address (the socket's peer, or what trusted proxies say) goes with its request.
  const http = createServer((req, res) => {
    const address = trusted.clientAddress(req);
    const viaSdk = (r: IncomingMessage, s: ServerResponse, body: string | undefined): void => {
      if (body === undefined) void toNodeHandler({ fetch: (request) => fetch(request, address) }, nodeOpts)(r, s);
      else void serveWithBody(r, s, body, (request) => fetch(request, address), nodeOpts.onerror);
    };
    if (lean === undefined) viaSdk(req, res, undefined);
    else lean.handle(req, res, address, viaSdk);
  });
  // Long-lived notification streams: no request timeout, idle sockets closed by keep-alive rules.
  http.requestTimeout = 0;
  http.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(config.httpPort, config.httpHost, resolve);
  });
  const addr = http.address() as AddressInfo;
  const url = `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
  const internal = await startHealthServer({ port: config.internalHttpPort, host: config.internalHttpHost, service: 'endpoint', isReady: () => ready, metricsHandler: telemetry.metricsHandler });
  ready = true;
  log.info('endpoint ready', { url, internal: internal.url, publicUrl: config.publicUrl, allowedHosts: config.allowedHosts, cors: config.corsOrigins });
  let stopping: Promise<void> | undefined;
  return {
    url,
    internalUrl: internal.url,
    stop: () =>
      (stopping ??= (async () => {
        ready = false;
        lean?.close();
        await servers.close();
        http.closeAllConnections();
        await new Promise<void>((r) => http.close(() => r()));
        await internal.close();
        toolSets.close();
        await tokens.close();
        await runtime.close();
        redis.disconnect();
        await db.destroy();
        if (opts.telemetry === undefined) await telemetry.shutdown();
      })()),
  };
}
