import { Redis } from 'ioredis';
import { connectBus } from '@mcpx/bus';
import type { Config } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { ApprovalStore, InputStore, LeaseQuota, REDIS_FAIL_FAST, RateLimiter, RunAgents, SingleFlight } from '@mcpx/locks';
import { createLogger, type LogSink } from '@mcpx/log';
import { ProxyClient } from '@mcpx/proxy-client';
import { SecretBox } from '@mcpx/secrets';
import { createOutboundFetch } from '@mcpx/outbound';
import { responseCutRecorder, setupTelemetry, startHealthServer, tracingFetch, type Telemetry } from '@mcpx/telemetry';
import { Discovery } from './discovery/discovery.js';
import { EventStream } from './http/event-stream.js';
import { createHttpServer } from './http-server.js';
import { consumeObservedTools } from './nats/observed-tools.js';
import { AccountsRepository } from './repositories/accounts.repository.js';
import { AgentsRepository } from './repositories/agents.repository.js';
import { McpServersRepository } from './repositories/mcp-servers.repository.js';
import { SecretsRepository } from './repositories/secrets.repository.js';
import { ToolPermissionsRepository } from './repositories/tool-permissions.repository.js';
import { Reprober } from './discovery/reprober.js';
import { startAuditRetention } from './audit/audit-log.js';
import { publishReviewRequested } from './pins/review.actions.js';
import { BuiltinDiscoveriesRepository } from './builtins/builtin-discoveries.repository.js';
import { BuiltinServers } from './builtins/builtin-servers.js';
import { VendorConnectionsRepository } from './credentials/vendor-connections.repository.js';
import { VendorCredentials } from './credentials/vendor-credentials.js';
import { clientMetadataDocumentHandler, clientMetadataDocumentUrl } from './credentials/oauth/client-metadata-document.js';
import { oauthCallbackHandler } from './credentials/oauth/oauth-callback.js';
import { OAuthConnectionsRepository } from './credentials/oauth/oauth-connections.repository.js';
import { answerOAuthRefresh } from './nats/oauth-refresh-responder.js';
import { OAuthService } from './credentials/oauth/oauth-service.js';
import { OAuthTickets } from './credentials/oauth/browser-binding.js';
import { oauthStartHandler } from './credentials/oauth/oauth-start.js';
import { bindUnboundSecretsOnce } from './credentials/secret-binding.js';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { OAUTH_CALLBACK_PATH, OAUTH_START_PATH } from './credentials/oauth/paths.js';
import { postgresPortOf } from './http/dependency-errors.js';
import { EventOutbox } from './events/outbox.js';
import { CredentialReader } from '@mcpx/credentials';
import { createAuthorizationServer } from './authorization-server/index.js';

/** The action types the registry dispatches (the OpenAPI document at `/v1/openapi.json` describes each). */
export { dispatchedActionTypes } from './actions/index.js';
/** The registry's outbox of JetStream events (written with the commit, published after it). */
export { EventOutbox, type OutboxEvent } from './events/outbox.js';

export interface RegistryOptions {
  /** Telemetry set up by the caller (tests pass one with an in-memory exporter). */
  telemetry?: Telemetry;
  logSink?: LogSink;
  /**
   * Background re-probe of servers in `error`: the backoff base (default 5 s, doubling per
   * failure up to 15 min, ±20 % jitter) and how often due servers are looked for (default
   * min(2 s, baseMs)). `REGISTRY_REPROBE_BASE_MS` sets the base in main.ts.
   */
  reprobe?: { baseMs?: number; intervalMs?: number };
  /** Remote discoveries this instance runs at once (default 16; `REGISTRY_DISCOVERY_CONCURRENCY`). */
  discoveryConcurrency?: number;
  /** The registry's public base URL, for the OAuth callback (default: the address it listens on). */
  publicUrl?: string;
  /**
   * Serve the OAuth client ID metadata document and offer its URL as the client id where an
   * authorization server supports those (default true; only ever with an https `publicUrl`).
   * Off for a registry whose public URL authorization servers cannot reach.
   */
  clientMetadataDocument?: boolean;
}

export interface RunningRegistry {
  /** The public API (with `/healthz`; never `/metrics`). */
  url: string;
  /** The internal port (`INTERNAL_HTTP_PORT`): `/healthz` and `/metrics`. */
  internalUrl: string;
  instance: string;
  stop(): Promise<void>;
}

/** Wires the registry from its configuration and starts serving. */
export async function startRegistry(config: Config, opts: RegistryOptions = {}): Promise<RunningRegistry> {
  const log = createLogger('registry', { level: config.logLevel, fields: { instance: config.instanceId }, ...(opts.logSink ? { sink: opts.logSink } : {}) });
  // A malformed TRUSTED_PROXIES stops the start before anything is opened.
  const trustedProxies = new TrustedProxies(config.trustedProxies);
  const telemetry = opts.telemetry ?? (await setupTelemetry({ serviceName: 'registry', serviceInstanceId: config.instanceId, ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}) }));
  // The https-only CHECK constraint reads this: the local profile allows http to any host.
  const allowHttpHosts = config.outbound.profile === 'local' ? ['*'] : config.outbound.allowHttpHosts;
  const db = createDb(config.databaseUrl, { allowHttpHosts, applicationName: 'registry', onIdleError: (err) => log.warn('database connection dropped', { err }) });
  await migrate(db, 'registry');
  // An action that needs Redis while it is down is refused at once and typed (`unavailable`), not
  // queued behind the client's reconnects: no offline queue, a command timeout, one retry.
  const redis = new Redis(config.redisUrl, { ...REDIS_FAIL_FAST, lazyConnect: true });
  let redisDown = false;
  redis.on('error', (err: Error) => {
    if (!redisDown) log.warn('redis unavailable: actions that need it answer unavailable until it is back', { err });
    redisDown = true;
  });
  redis.on('ready', () => {
    if (redisDown) log.info('redis back');
    redisDown = false;
  });
  await redis.connect();
  const bus = await connectBus({
    url: config.natsUrl,
    name: `registry ${config.instanceId}`,
    prefix: config.natsPrefix,
    log,
    ...(config.natsCredentials ? { credentials: config.natsCredentials, inboxPrefix: config.natsCredentials.inboxPrefix } : {}),
  });
  const outboundFetch = createOutboundFetch(config.outbound, { onResponseCut: responseCutRecorder(telemetry.meter) });
  const secrets = new SecretsRepository(db, new SecretBox(config.keyring));
  // Server credentials, read from the rows (and with the codecs) the proxy reads them with.
  const credentials = new CredentialReader(db, new SecretBox(config.keyring), config.builtinEndpoints);
  const servers = new McpServersRepository(db);
  const accounts = new AccountsRepository(db);
  const permissions = new ToolPermissionsRepository(db);
  const singleFlight = new SingleFlight(redis, config.redisPrefix);
  // Known once the server listens (a test's port 0); the operator's public URL wins.
  let publicUrl = opts.publicUrl ?? '';
  const oauthStore = new OAuthConnectionsRepository(db, new SecretBox(config.keyring));
  const tickets = new OAuthTickets(redis, config.redisPrefix, {
    startUrl: () => `${publicUrl}${OAUTH_START_PATH}`,
    secureCookie: () => publicUrl.startsWith('https:'),
    meter: telemetry.meter,
  });
  const oauth = new OAuthService({
    store: oauthStore,
    tickets,
    servers,
    singleFlight,
    log,
    fetch: tracingFetch(outboundFetch),
    redirectUrl: () => `${publicUrl}${OAUTH_CALLBACK_PATH}`,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    clientMetadataUrl: () => (opts.clientMetadataDocument === false ? undefined : clientMetadataDocumentUrl(publicUrl)),
  });
  // Every JetStream event of the registry is written with the commit of its change and published after it.
  const outbox = new EventOutbox({ db, bus, log, meter: telemetry.meter, tracer: telemetry.tracer });
  let leaseWarned = 0;
  const discovery = new Discovery({
    // An account's discoveries in flight are bounded across instances (Redis leases).
    accountLeases: new LeaseQuota(redis, config.redisPrefix, {
      onError: (err) => {
        if (Date.now() - leaseWarned < 10_000) return;
        leaseWarned = Date.now();
        log.warn('discovery leases unavailable, admitting', { err });
      },
    }),
    oauthFreshen: (s, held) => oauth.freshen(s, held),
    oauthRenew: (s, used, challenge) => oauth.renew(s, used, challenge),
    permissions,
    servers,
    credentials,
    bus,
    outbox,
    singleFlight,
    log,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    // Outbound safety: https only, no private addresses (unless the operator allows), the
    // address checked is the address connected to, no cross-origin redirects.
    fetch: tracingFetch(outboundFetch),
    quotas: config.quotas,
    // Contract pinning: a pinned server's listing is recorded against its accepted contracts.
    pins: { requested: (s, changes) => publishReviewRequested({ bus }, s, changes) },
    ...(opts.reprobe?.baseMs !== undefined ? { reprobeBaseMs: opts.reprobe.baseMs } : {}),
    ...(opts.discoveryConcurrency !== undefined ? { concurrency: opts.discoveryConcurrency } : {}),
  });
  // Built-in servers: static descriptors lit by vendor connections (no mcp_servers row).
  const vendorConnections = new VendorConnectionsRepository(db, new SecretBox(config.keyring));
  const builtins = new BuiltinServers({
    db,
    connections: vendorConnections,
    discoveries: new BuiltinDiscoveriesRepository(db),
    // Vendor tokens refresh under the same Redis single flight as remote-server OAuth.
    credentials: new VendorCredentials({
      connections: vendorConnections,
      singleFlight,
      log,
      tracer: telemetry.tracer,
      meter: telemetry.meter,
      clients: config.builtinVendorClients,
      tokenEndpoints: config.builtinTokenEndpoints,
      fetch: tracingFetch(outboundFetch),
    }),
    permissions,
    discovery,
    bus,
    outbox,
    credentialReader: credentials,
    log,
    endpoints: config.builtinEndpoints,
    ...(opts.reprobe?.baseMs !== undefined ? { reprobeBaseMs: opts.reprobe.baseMs } : {}),
  });
  // Dropped malformed notifications are logged where the registry logs (without their bytes).
  const events = new EventStream(bus.nc, bus.subjects, log);
  let ready = false;
  const server = createHttpServer({
    actions: {
      db,
      accounts,
      agents: new AgentsRepository(db),
      servers,
      secrets,
      discovery,
      bus,
      proxy: new ProxyClient(bus.nc, bus.subjects, { meter: telemetry.meter }),
      log,
      tracer: telemetry.tracer,
      style: config.toolNameStyle,
      outbound: config.outbound,
      permissions,
      approvals: new ApprovalStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs }),
      runAgents: new RunAgents(redis, config.redisPrefix),
      inputs: new InputStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs }),
      oauth,
      builtins,
      pins: { defaultMode: config.pinAudit.pinDefault, writersMayReview: config.pinAudit.writersMayReview },
      outbox,
    },
    redis,
    redisPrefix: config.redisPrefix,
    postgresPort: postgresPortOf(config.databaseUrl),
    quotas: config.quotas,
    trustedProxies,
    log,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    events,
    isReady: () => ready,
    oauthCallback: oauthCallbackHandler({ oauth, discovery, tickets, log }),
    oauthStart: oauthStartHandler({ tickets, store: oauthStore, log, tracer: telemetry.tracer }),
    ...(opts.clientMetadataDocument === false ? {} : { oauthClientMetadata: clientMetadataDocumentHandler(() => publicUrl) }),
    // The agent endpoint's OAuth sign-in: this registry is its authorization server.
    authorizationServer: createAuthorizationServer({
      db,
      fetch: tracingFetch(outboundFetch),
      publicUrl: () => publicUrl,
      log,
      tracer: telemetry.tracer,
      meter: telemetry.meter,
      rates: { limiter: new RateLimiter(redis, config.redisPrefix), clientAddress: (req) => trustedProxies.clientAddress(req) },
    }),
  });
  const observed = consumeObservedTools({ bus, discovery, log, meter: telemetry.meter, servers, others: [builtins] });
  const oauthRefresh = answerOAuthRefresh({ bus, servers, oauth, discovery, log, builtins });
  const reprobeIntervalMs = opts.reprobe?.intervalMs ?? Math.min(2_000, opts.reprobe?.baseMs ?? 2_000);
  const reprober = new Reprober([servers, builtins], discovery, log, { intervalMs: reprobeIntervalMs, batch: 50, concurrency: 8 });
  const unprobed = await builtins.scheduleUnprobed();
  if (unprobed > 0) log.info('built-ins scheduled for a first probe', { count: unprobed });
  // Secrets sealed before origins were recorded open for nobody: bound to their server's origin first.
  await bindUnboundSecretsOnce({ db, box: new SecretBox(config.keyring), servers, redis, prefix: config.redisPrefix }, log);
  reprober.start();
  // Events a registry committed and did not get to publish (it died in between): sent now, then swept.
  outbox.start();
  const retention = startAuditRetention(db, config.pinAudit.auditRetentionDays, log);
  await new Promise<void>((resolve) => server.listen(config.httpPort, config.httpHost, resolve));
  // Metrics describe every account's traffic: served on the internal port only, not the API's.
  const internal = await startHealthServer({ port: config.internalHttpPort, host: config.internalHttpHost, service: 'registry', isReady: () => ready, metricsHandler: telemetry.metricsHandler });
  ready = true;
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : config.httpPort;
  log.info('registry ready', { url: `http://${config.httpHost}:${port}`, internal: internal.url, profile: config.outbound.profile });

  const url = `http://${config.httpHost}:${port}`;
  if (publicUrl === '') publicUrl = url;
  return {
    url,
    internalUrl: internal.url,
    instance: config.instanceId,
    stop: async () => {
      ready = false;
      reprober.stop();
      retention.stop();
      await outbox.stop();
      observed.unsubscribe();
      oauthRefresh.unsubscribe();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await internal.close();
      await reprober.idle();
      await bus.close();
      redis.disconnect();
      await db.destroy();
      await outboundFetch.close();
      if (opts.telemetry === undefined) await telemetry.shutdown();
    },
  };
}

