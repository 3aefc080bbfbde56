import type { AuthorizationServerSettings } from '@mcpx/config';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { AUTHORIZATION_SERVER_ROLE, createDb, type Db } from '@mcpx/db';
import { InboundGuard } from '@mcpx/inbound';
import { createLogger, type Logger, type LogSink } from '@mcpx/log';
import { createOutboundFetch } from '@mcpx/outbound';
import { FailFastRedis, RateLimiter } from '@mcpx/shared-state';
import {
  responseCutRecorder,
  serviceTelemetry,
  startInternalServer,
  tracingFetch,
  type Telemetry,
} from '@mcpx/telemetry';
import { answerInboundRefusal, createHttpFace } from './http-face.js';
import { createAuthorizationServer } from './index.js';

export { authorizationServerMetadata, createAuthorizationServer } from './index.js';
export type { AuthorizationServerDeps, AuthorizationServerRoutes } from './index.js';

export interface AuthorizationServerOptions {
  /** Telemetry set up by the caller (tests pass one with an in-memory exporter). */
  telemetry?: Telemetry;
  logSink?: LogSink;
}

export interface RunningAuthorizationServer {
  /** The public face: the routes and `/healthz`. */
  url: string;
  /** The internal port: `/healthz` and `/metrics`. */
  internalUrl: string;
  /** The issuer (the public URL, else the address it listens on). */
  issuer: string;
  stop(): Promise<void>;
}

/**
 * The pool, every connection as {@link AUTHORIZATION_SERVER_ROLE}, checked before serving: the
 * database answers as the role and the role may use the sign-ins' table (the registry's migrations
 * create both). A start without them stops here, saying so, instead of failing its first sign-in.
 */
async function openDatabase(settings: AuthorizationServerSettings, log: Logger): Promise<Db> {
  const db = createDb(settings.databaseUrl, {
    applicationName: 'authorization-server',
    role: AUTHORIZATION_SERVER_ROLE,
    onIdleError: (err) => log.warn('database connection dropped', { err }),
  });
  try {
    await db.selectFrom('registry.oauth_sign_ins').select('id').limit(0).execute();
    return db;
  } catch (err) {
    await db.destroy();
    throw new Error(
      `the database refused the authorization server's role ${AUTHORIZATION_SERVER_ROLE} (start the registry first: its migrations create the role and its grants): ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * The agent endpoint's OAuth 2.1 authorization server as its own process: Postgres as its own
 * role (`AUTHORIZATION_SERVER_ROLE`: the sign-ins, refresh tokens and the agent tokens it mints,
 * nothing else), Redis for the per-address limits, the outbound fetch for client ID metadata
 * documents. No key ring and no NATS: it holds neither.
 */
export async function startAuthorizationServer(
  settings: AuthorizationServerSettings,
  opts: AuthorizationServerOptions = {},
): Promise<RunningAuthorizationServer> {
  const log = createLogger('authorization-server', {
    level: settings.logLevel,
    fields: { instance: settings.instanceId },
    ...(opts.logSink ? { sink: opts.logSink } : {}),
  });
  const trustedProxies = new TrustedProxies(settings.trustedProxies);
  const telemetry = await serviceTelemetry(
    opts.telemetry,
    'authorization-server',
    settings.instanceId,
    settings.otlpEndpoint,
  );
  const db = await openDatabase(settings, log);
  const redis = new FailFastRedis(settings.redisUrl);
  redis.on('error', (err: Error) => log.warn('redis unavailable', { err }));
  await redis.connect();
  const outboundFetch = createOutboundFetch(settings.outbound, { onResponseCut: responseCutRecorder(telemetry.meter) });
  let publicUrl = settings.publicUrl ?? '';
  let ready = false;
  const inbound = new InboundGuard({
    limits: settings.inbound,
    exempt: (address) => trustedProxies.has(address),
    meter: telemetry.meter,
    log,
    answer: answerInboundRefusal,
  });
  const routes = createAuthorizationServer({
    db,
    fetch: tracingFetch(outboundFetch),
    publicUrl: () => publicUrl,
    ...(settings.consoleUrl !== undefined ? { consoleUrl: () => settings.consoleUrl as string } : {}),
    log,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    rates: {
      // Fails closed: a sign-in or token request whose address's limit Redis cannot count is refused (503).
      limiter: new RateLimiter(redis, settings.redisPrefix, {
        whenRedisFails: 'refuse',
        onError: limitWarning(log),
      }),
      clientAddress: (req) => trustedProxies.clientAddress(req),
    },
    bounds: settings.quotas,
    readBody: (req, res, maxBytes) => inbound.read(req, res, maxBytes),
  });
  const server = createHttpFace({ inbound, routes, isReady: () => ready });
  await new Promise<void>((resolve) => server.listen(settings.httpPort, settings.httpHost, resolve));
  const internal = await startInternalServer('authorization-server', settings, telemetry, () => ready);
  const addr = server.address();
  const url = `http://${settings.httpHost}:${typeof addr === 'object' && addr !== null ? addr.port : settings.httpPort}`;
  if (publicUrl === '') publicUrl = url;
  ready = true;
  log.info('authorization server ready', { url, issuer: publicUrl, internal: internal.url });
  return {
    url,
    internalUrl: internal.url,
    issuer: publicUrl,
    stop: async () => {
      ready = false;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await internal.close();
      redis.disconnect();
      await db.destroy();
      await outboundFetch.close();
      if (opts.telemetry === undefined) await telemetry.shutdown();
    },
  };
}

/** Says a limit's Redis failure at most every 10 s, not per request. */
function limitWarning(log: Logger): (err: Error) => void {
  let last = 0;
  return (err) => {
    if (Date.now() - last < 10_000) return;
    last = Date.now();
    log.warn('sign-in rate limits unavailable, refusing', { err });
  };
}
