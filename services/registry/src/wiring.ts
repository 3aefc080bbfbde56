import type { Redis } from 'ioredis';
import { connectBus, type Bus } from '@mcpx/bus';
import { busConnection, type AccountCreation, type Config } from '@mcpx/config';
import { CredentialReader } from '@mcpx/stored';
import { createDb, migrate, type Db } from '@mcpx/db';
import type { SingleFlight } from '@mcpx/shared-state';
import { ApprovalStore, FailFastRedis, InputStore, LeaseQuota, RunAgents } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import { ProxyClient } from '@mcpx/proxy-client';
import type { SecretBox } from '@mcpx/secrets';
import type { Telemetry } from '@mcpx/telemetry';
import type { ActionDeps } from './actions/index.js';
import { BuiltinDiscoveriesRepository } from './builtins/builtin-discoveries.repository.js';
import { BuiltinServers } from './builtins/builtin-servers.js';
import { OAuthTickets } from './credentials/oauth/browser-binding.js';
import { clientMetadataDocumentUrl } from './credentials/oauth/client-metadata-document.js';
import { OAuthConnectionsRepository } from './credentials/oauth/oauth-connections.repository.js';
import { OAuthService } from './credentials/oauth/oauth-service.js';
import { OAUTH_CALLBACK_PATH, OAUTH_START_PATH } from './credentials/oauth/paths.js';
import { VendorConnectionsRepository } from './credentials/vendor-connections.repository.js';
import { VendorCredentials } from './credentials/vendor-credentials.js';
import { Discovery } from './discovery/discovery.js';
import type { EventOutbox } from './events/outbox.js';
import { publishReviewRequested } from './review/review.actions.js';
import { AccountsRepository } from './accounts/accounts.repository.js';
import { AgentsRepository } from './agents/agents.repository.js';
import { McpServersRepository } from './catalog/mcp-servers.repository.js';
import { HeldEntries } from './audit/held-entries.js';
import { SecretsRepository } from './credentials/secrets.repository.js';
import { ToolPermissionsRepository } from './catalog/tool-permissions.repository.js';

/**
 * The registry's floors, each built from a plain deps object: what `startRegistry` (registry.ts)
 * wires together on one screen. Nothing here starts background work or listens.
 */

/** Postgres (migrated), Redis (failing fast) and NATS, opened in that order. */
export async function openConnections(config: Config, log: Logger): Promise<{ db: Db; redis: Redis; bus: Bus }> {
  // The https-only CHECK constraint reads this: the local profile allows http to any host.
  const allowHttpHosts = config.outbound.profile === 'local' ? ['*'] : config.outbound.allowHttpHosts;
  const db = createDb(config.databaseUrl, {
    allowHttpHosts,
    applicationName: 'registry',
    onIdleError: (err) => log.warn('database connection dropped', { err }),
  });
  await migrate(db, 'registry');
  // The proxies' call log, which ListCalls reads (the proxies migrate it too: whichever starts first).
  await migrate(db, 'activity');
  // An action that needs Redis while it is down is refused at once and typed (`unavailable`), not
  // queued behind the client's reconnects: no offline queue, a command timeout, one retry.
  const redis = new FailFastRedis(config.redisUrl);
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
  const bus = await connectBus({ ...busConnection(config), name: `registry ${config.instanceId}`, log });
  return { db, redis, bus };
}

/** The repositories of the registry's own tables. */
export function repositories(db: Db, box: SecretBox, accounts: AccountCreation = 'open') {
  return {
    accounts: new AccountsRepository(db, accounts),
    agents: new AgentsRepository(db),
    servers: new McpServersRepository(db),
    secrets: new SecretsRepository(db, box),
    permissions: new ToolPermissionsRepository(db),
  };
}

export type Repositories = ReturnType<typeof repositories>;

interface FloorDeps {
  config: Config;
  /** The options of `startRegistry` the floors read. */
  opts: {
    reprobe?: { baseMs?: number };
    discoveryConcurrency?: number;
    clientMetadataDocument?: boolean;
    authorizationServerUrl?: string;
  };
  db: Db;
  redis: Redis;
  bus: Bus;
  box: SecretBox;
  log: Logger;
  telemetry: Telemetry;
  /** The outbound-safe, traced fetch (https only, no private addresses unless allowed, no cross-origin redirects). */
  fetch: typeof fetch;
  singleFlight: SingleFlight;
  /** The registry's public base URL, known once it listens. */
  publicUrl: () => string;
}

/** The credentials room: the reading shared with the proxy, OAuth for remote servers, vendor tokens. */
export function credentialsRoom(d: FloorDeps, servers: McpServersRepository) {
  const reader = new CredentialReader(d.db, d.box, d.config.builtinEndpoints);
  const oauthStore = new OAuthConnectionsRepository(d.db, d.box);
  const tickets = new OAuthTickets(d.redis, d.config.redisPrefix, {
    startUrl: () => `${d.publicUrl()}${OAUTH_START_PATH}`,
    secureCookie: () => d.publicUrl().startsWith('https:'),
    meter: d.telemetry.meter,
  });
  const oauth = new OAuthService({
    store: oauthStore,
    tickets,
    servers,
    singleFlight: d.singleFlight,
    log: d.log,
    fetch: d.fetch,
    redirectUrl: () => `${d.publicUrl()}${OAUTH_CALLBACK_PATH}`,
    tracer: d.telemetry.tracer,
    meter: d.telemetry.meter,
    clientMetadataUrl: () =>
      d.opts.clientMetadataDocument === false ? undefined : clientMetadataDocumentUrl(d.publicUrl()),
  });
  const vendorConnections = new VendorConnectionsRepository(d.db, d.box);
  // Vendor tokens refresh under the same Redis single flight as remote-server OAuth.
  const vendor = new VendorCredentials({
    connections: vendorConnections,
    singleFlight: d.singleFlight,
    log: d.log,
    tracer: d.telemetry.tracer,
    meter: d.telemetry.meter,
    clients: d.config.builtinVendorClients,
    tokenEndpoints: d.config.builtinTokenEndpoints,
    fetch: d.fetch,
  });
  return { reader, oauthStore, tickets, oauth, vendorConnections, vendor };
}

export type CredentialsRoom = ReturnType<typeof credentialsRoom>;

/** The discovery engine of custom servers, and the built-in servers that share it. */
export function discoveryFloor(
  d: FloorDeps,
  repos: Repositories,
  creds: CredentialsRoom,
  outbox: EventOutbox,
): { discovery: Discovery; builtins: BuiltinServers } {
  let leaseWarned = 0;
  const reprobeBase = d.opts.reprobe?.baseMs !== undefined ? { reprobeBaseMs: d.opts.reprobe.baseMs } : {};
  const discovery = new Discovery({
    // An account's discoveries in flight are bounded across instances (Redis leases; no answer
    // from Redis: the discovery is refused, never run uncounted).
    accountLeases: new LeaseQuota(d.redis, d.config.redisPrefix, {
      onError: (err) => {
        if (Date.now() - leaseWarned < 10_000) return;
        leaseWarned = Date.now();
        d.log.warn('discovery leases unavailable, refusing', { err });
      },
    }),
    oauthFreshen: (s, held) => creds.oauth.freshen(s, held),
    oauthRenew: (s, used, challenge) => creds.oauth.renew(s, used, challenge),
    permissions: repos.permissions,
    servers: repos.servers,
    credentials: creds.reader,
    bus: d.bus,
    outbox,
    singleFlight: d.singleFlight,
    log: d.log,
    tracer: d.telemetry.tracer,
    meter: d.telemetry.meter,
    fetch: d.fetch,
    quotas: d.config.quotas,
    // Contract pinning: a pinned server's listing is recorded against its accepted contracts.
    pins: { requested: (s, changes) => publishReviewRequested({ bus: d.bus }, s, changes) },
    ...reprobeBase,
    ...(d.opts.discoveryConcurrency !== undefined ? { concurrency: d.opts.discoveryConcurrency } : {}),
  });
  // Built-in servers: static descriptors lit by vendor connections (no mcp_servers row).
  const builtins = new BuiltinServers({
    db: d.db,
    connections: creds.vendorConnections,
    discoveries: new BuiltinDiscoveriesRepository(d.db),
    credentials: creds.vendor,
    permissions: repos.permissions,
    discovery,
    bus: d.bus,
    outbox,
    credentialReader: creds.reader,
    log: d.log,
    endpoints: d.config.builtinEndpoints,
    ...reprobeBase,
  });
  return { discovery, builtins };
}

/** Everything an action handler may use. */
export function actionDeps(
  d: FloorDeps,
  repos: Repositories,
  creds: CredentialsRoom,
  floor: { discovery: Discovery; builtins: BuiltinServers },
  outbox: EventOutbox,
): ActionDeps {
  const { config, redis } = d;
  return {
    db: d.db,
    heldEntries: new HeldEntries(config.heldEntries),
    ...repos,
    discovery: floor.discovery,
    bus: d.bus,
    proxy: new ProxyClient(d.bus.nc, d.bus.subjects, { meter: d.telemetry.meter }),
    log: d.log,
    tracer: d.telemetry.tracer,
    style: config.toolNameStyle,
    outbound: config.outbound,
    approvals: new ApprovalStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs }),
    runAgents: new RunAgents(redis, config.redisPrefix),
    // A person's answers are sealed here with the deployment's key ring; the proxy opens them.
    inputs: new InputStore(redis, config.redisPrefix, { box: d.box, ttlMs: config.approvalTtlMs }),
    oauth: creds.oauth,
    builtins: floor.builtins,
    pins: { defaultMode: config.pinAudit.pinDefault, writersMayReview: config.pinAudit.writersMayReview },
    outbox,
    // DecideSignIn's continue link: on the authorization server's own origin when it has one.
    ...(d.opts.authorizationServerUrl !== undefined ? { authorizationServerUrl: d.opts.authorizationServerUrl } : {}),
  };
}
