import { DEFAULT_INBOUND_LIMITS, type Config, type InboundLimits } from '@mcpx/config';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { InboundGuard } from '@mcpx/inbound';
import { ApprovalStore, SingleFlight, redisMemoryProblems, redisMemorySettings } from '@mcpx/shared-state';
import { createLogger, type Logger, type LogSink } from '@mcpx/log';
import { createOutboundFetch } from '@mcpx/outbound';
import { SecretBox } from '@mcpx/secrets';
import {
  responseCutRecorder,
  serviceTelemetry,
  startInternalServer,
  tracingFetch,
  type Telemetry,
} from '@mcpx/telemetry';
import { startAuditRetention } from './audit/audit-log.js';
import { clientMetadataDocumentHandler } from './credentials/oauth/client-metadata-document.js';
import { oauthCallbackHandler } from './credentials/oauth/oauth-callback.js';
import { oauthStartHandler } from './credentials/oauth/oauth-start.js';
import { bindUnboundSecretsOnce } from './credentials/secret-binding.js';
import { Reprober } from './discovery/reprober.js';
import { EventOutbox } from './events/outbox.js';
import { answerInboundRefusal, createHttpServer } from './http/http-server.js';
import { EventStream } from './http/event-stream.js';
import { answerOAuthRefresh } from './nats/oauth-refresh-responder.js';
import { consumeObservedTools } from './nats/observed-tools.js';
import { answerTokenDecisionAudit } from './nats/token-decision-audit.js';
import { recordTaskAudit } from './nats/task-audit.js';
import {
  actionDeps,
  credentialsRoom,
  discoveryFloor,
  openConnections,
  repositories,
  type CredentialsRoom,
  type Repositories,
} from './wiring.js';

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
   * min(2 s, baseMs)). `REGISTRY_REPROBE_BASE_MS` sets the base in main.ts. `owedAfterMs`: how
   * long after a save that no discovery has recorded the re-prober discovers the server (default
   * the discovery deadline plus 60 s).
   */
  reprobe?: { baseMs?: number; intervalMs?: number; owedAfterMs?: number };
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
  /** The bounds of the HTTP face before a request is known (default `DEFAULT_INBOUND_LIMITS`; `REGISTRY_BODY_TIMEOUT_MS` and the others in main.ts). */
  inbound?: InboundLimits;
  /**
   * The agent endpoint as the console shows it (its URL, client configs): `publicUrl`
   * (`ENDPOINT_PUBLIC_URL`), else `port` (`ENDPOINT_PORT`, default 8083) on the console's own host.
   */
  endpoint?: { publicUrl?: string; port?: number };
  /**
   * The public URL of the agent endpoint's authorization server (`@mcpx/authorization-server`, its
   * own process) when it is not on this registry's origin: DecideSignIn's continue link is built on
   * it (`AUTHORIZATION_SERVER_PUBLIC_URL`). Absent: the link is a path on this origin, where the
   * front routes the authorization server's paths to it.
   */
  authorizationServerUrl?: string;
}

export interface RunningRegistry {
  /** The public API (with `/healthz`; never `/metrics`). */
  url: string;
  /** The internal port (`INTERNAL_HTTP_PORT`): `/healthz` and `/metrics`. */
  internalUrl: string;
  instance: string;
  stop(): Promise<void>;
}

/**
 * Wires the registry from its configuration and starts serving: connections, then each floor
 * (repositories, credentials, discovery and built-ins, actions), the HTTP and NATS faces, the
 * background work; `stop` undoes it in reverse. The floors are built in ./wiring.ts.
 */
export async function startRegistry(config: Config, opts: RegistryOptions = {}): Promise<RunningRegistry> {
  const { floor, outboundFetch, trustedProxies, setPublicUrl } = await openFloor(config, opts);
  const { db, redis, bus, log, telemetry } = floor;
  const repos = repositories(db, floor.box, config.accounts);
  const creds = credentialsRoom(floor, repos.servers);
  // Every JetStream event of the registry is written with the commit of its change and published after it.
  const outbox = new EventOutbox({ db, bus, log, meter: telemetry.meter, tracer: telemetry.tracer });
  const rooms = discoveryFloor(floor, repos, creds, outbox);
  let ready = false;
  const server = httpFace(floor, trustedProxies, () => ready, {
    actions: actionDeps(floor, repos, creds, rooms, outbox),
    creds,
    discovery: rooms.discovery,
  });
  const subscriptions = natsFaces(floor, repos, creds, rooms);
  const background = await startBackground(floor, repos, rooms, outbox);
  await new Promise<void>((resolve) => server.listen(config.httpPort, config.httpHost, resolve));
  // Metrics describe every account's traffic: served on the internal port only, not the API's.
  const internal = await startInternalServer('registry', config, telemetry, () => ready);
  ready = true;
  const addr = server.address();
  const url = `http://${config.httpHost}:${typeof addr === 'object' && addr !== null ? addr.port : config.httpPort}`;
  setPublicUrl(url);
  log.info('registry ready', { url, internal: internal.url, profile: config.outbound.profile });
  return {
    url,
    internalUrl: internal.url,
    instance: config.instanceId,
    stop: async () => {
      ready = false;
      background.reprober.stop();
      background.retention.stop();
      await outbox.stop();
      for (const subscription of subscriptions) subscription.unsubscribe();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await internal.close();
      await background.reprober.idle();
      await bus.close();
      redis.disconnect();
      await db.destroy();
      await outboundFetch.close();
      if (opts.telemetry === undefined) await telemetry.shutdown();
    },
  };
}

type Floor = Parameters<typeof credentialsRoom>[0] & { opts: RegistryOptions };
type Rooms = ReturnType<typeof discoveryFloor>;

/**
 * What every floor stands on: the logger, telemetry, the connections, the outbound fetch, the key
 * ring and the public URL (known once the server listens, unless the operator gave one).
 */
async function openFloor(config: Config, opts: RegistryOptions) {
  const log = createLogger('registry', {
    level: config.logLevel,
    fields: { instance: config.instanceId },
    ...(opts.logSink ? { sink: opts.logSink } : {}),
  });
  // A malformed TRUSTED_PROXIES stops the start before anything is opened.
  const trustedProxies = new TrustedProxies(config.trustedProxies);
  const telemetry = await serviceTelemetry(opts.telemetry, 'registry', config.instanceId, config.otlpEndpoint);
  const { db, redis, bus } = await openConnections(config, log);
  // A Redis that is unbounded or evicts is said at start (deploy/k8s/datastores.yaml): never fatal.
  await warnRedisMemory(redis, log);
  const outboundFetch = createOutboundFetch(config.outbound, { onResponseCut: responseCutRecorder(telemetry.meter) });
  // Known once the server listens (a test's port 0); the operator's public URL wins.
  let publicUrl = opts.publicUrl ?? '';
  const floor: Floor = {
    config,
    opts,
    db,
    redis,
    bus,
    box: new SecretBox(config.keyring),
    log,
    telemetry,
    fetch: tracingFetch(outboundFetch),
    singleFlight: new SingleFlight(redis, config.redisPrefix),
    publicUrl: () => publicUrl,
  };
  const setPublicUrl = (url: string): void => {
    if (publicUrl === '') publicUrl = url;
  };
  return { floor, outboundFetch, trustedProxies, setPublicUrl };
}

/** The HTTP face: the action API behind one inbound guard, the event stream, the OAuth redirects. */
function httpFace(
  floor: Floor,
  trustedProxies: TrustedProxies,
  isReady: () => boolean,
  rooms: { actions: ReturnType<typeof actionDeps>; creds: CredentialsRoom; discovery: Rooms['discovery'] },
) {
  const { config, opts, log, telemetry, redis, bus } = floor;
  const { creds, discovery } = rooms;
  // Every body of the action API is read through one guard: one budget, one deadline.
  const inbound = new InboundGuard({
    limits: opts.inbound ?? DEFAULT_INBOUND_LIMITS,
    exempt: (address) => trustedProxies.has(address),
    meter: telemetry.meter,
    log,
    answer: answerInboundRefusal,
  });
  return createHttpServer({
    inbound,
    actions: rooms.actions,
    redis,
    redisPrefix: config.redisPrefix,
    quotas: config.quotas,
    trustedProxies,
    log,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    // Dropped malformed notifications are logged where the registry logs (without their bytes).
    events: new EventStream(bus.nc, bus.subjects, log),
    isReady,
    console: { endpoint: opts.endpoint ?? {} },
    oauthCallback: oauthCallbackHandler({ oauth: creds.oauth, discovery, tickets: creds.tickets, log }),
    oauthStart: oauthStartHandler({ tickets: creds.tickets, store: creds.oauthStore, log, tracer: telemetry.tracer }),
    ...(opts.clientMetadataDocument === false
      ? {}
      : { oauthClientMetadata: clientMetadataDocumentHandler(() => floor.publicUrl()) }),
  });
}

/**
 * The NATS faces: quiet discoveries from the proxies, their token refreshes, the endpoint's token
 * decisions to audit, and brokered tasks' creation, cancellation and expiry from the proxies' task events.
 */
function natsFaces(floor: Floor, repos: Repositories, creds: CredentialsRoom, rooms: Rooms): { unsubscribe(): void }[] {
  const { config, db, redis, bus, log, telemetry } = floor;
  const { discovery, builtins } = rooms;
  return [
    consumeObservedTools({ bus, discovery, log, meter: telemetry.meter, servers: repos.servers, others: [builtins] }),
    answerOAuthRefresh({ bus, servers: repos.servers, oauth: creds.oauth, discovery, log, builtins }),
    answerTokenDecisionAudit({
      bus,
      db,
      approvals: new ApprovalStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs }),
      log,
    }),
    recordTaskAudit({ bus, db, log }),
  ];
}

/** Background work: re-probes, a first probe of unprobed built-ins, unbound secrets, the outbox, audit retention. */
async function startBackground(floor: Floor, repos: Repositories, rooms: Rooms, outbox: EventOutbox) {
  const { config, opts, db, box, redis, log } = floor;
  const reprober = new Reprober([repos.servers, rooms.builtins], rooms.discovery, log, {
    intervalMs: opts.reprobe?.intervalMs ?? Math.min(2_000, opts.reprobe?.baseMs ?? 2_000),
    batch: 50,
    concurrency: 8,
    // Longer than a save's own discovery takes (bounded by the discovery deadline): what is owed
    // past it was lost, not under way.
    owedAfterMs: opts.reprobe?.owedAfterMs ?? config.quotas.discoveryDeadlineMs + 60_000,
  });
  const unprobed = await rooms.builtins.scheduleUnprobed();
  if (unprobed > 0) log.info('built-ins scheduled for a first probe', { count: unprobed });
  // Secrets sealed before origins were recorded open for nobody: bound to their server's origin first.
  await bindUnboundSecretsOnce({ db, box, servers: repos.servers, redis, prefix: config.redisPrefix }, log);
  reprober.start();
  // Events a registry committed and did not get to publish (it died in between): sent now, then swept.
  outbox.start();
  const retention = startAuditRetention(db, config.pinAudit.auditRetentionDays, log);
  return { reprober, retention };
}

/** Logs what is wrong with Redis's memory bound (no maxmemory, an evicting policy), if anything. */
async function warnRedisMemory(redis: Parameters<typeof redisMemorySettings>[0], log: Logger): Promise<void> {
  const settings = await redisMemorySettings(redis).catch(() => undefined);
  for (const problem of settings === undefined ? [] : redisMemoryProblems(settings))
    log.warn('redis memory', { problem });
}
