import { connectBus, payload, respond } from '@mcpx/bus';
import type { Config } from '@mcpx/config';
import { decodeProxyCancel, decodeRunEnded } from '@mcpx/contracts';
import { proxyReads } from '@mcpx/credentials';
import { createDb } from '@mcpx/db';
import { createLogger, type LogSink } from '@mcpx/log';
import { SecretBox } from '@mcpx/secrets';
import { createOutboundFetch } from '@mcpx/outbound';
import { responseCutRecorder, setupTelemetry, startServiceHttp, type Telemetry } from '@mcpx/telemetry';
import { LegacyAsks } from './legacy-inputs.js';
import { CallHandler, replyLimits } from './call-handler.js';
import { Catalog } from './catalog.js';
import { ProgressRelay } from './progress-relay.js';
import { OAuthTokens } from './oauth-tokens.js';
import { startCallService, type ProxyStats } from './call-service.js';
import { callGates, callLimiter, connectRedis, connectionPool } from './wiring.js';

export { PROXY_SERVICE_NAME, proxyServiceName } from './call-service.js';
export type { ProxyStats } from './call-service.js';

export interface ProxyOptions {
  telemetry?: Telemetry;
  logSink?: LogSink;
  /** Idle time after which a run's pool closes (default: `config.proxy.idleMs`). */
  idleMs?: number;
}

export interface RunningProxy {
  /** The public port: `/healthz` only. */
  healthUrl: string;
  /** The internal port (`INTERNAL_HTTP_PORT`): `/healthz`, `/metrics` and `/stats`. */
  internalUrl: string;
  instance: string;
  stats(): ProxyStats;
  stop(): Promise<void>;
}

/** Wires the proxy from its configuration and starts answering calls. */
export async function startProxy(config: Config, opts: ProxyOptions = {}): Promise<RunningProxy> {
  const instance = config.instanceId.replace(/[^A-Za-z0-9_-]/g, '_');
  const log = createLogger('proxy', { level: config.logLevel, fields: { instance }, ...(opts.logSink ? { sink: opts.logSink } : {}) });
  const telemetry = opts.telemetry ?? (await setupTelemetry({ serviceName: 'proxy', serviceInstanceId: instance, ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}) }));
  const db = createDb(config.databaseUrl, { applicationName: 'proxy', max: 10, onIdleError: (err) => log.warn('database connection dropped', { err }) });
  const bus = await connectBus({
    url: config.natsUrl,
    name: `proxy ${instance}`,
    prefix: config.natsPrefix,
    log,
    ...(config.natsCredentials ? { credentials: config.natsCredentials, inboxPrefix: config.natsCredentials.inboxPrefix } : {}),
  });
  const redis = await connectRedis(config, log);
  const limiter = callLimiter(redis, config, log);
  // A body cut at a bound is counted, and the call's span says why its answer stopped short.
  const outboundFetch = createOutboundFetch(config.outbound, { onResponseCut: responseCutRecorder(telemetry.meter) });
  // The proxy reads the owners' tables its read model names, and writes none (a write does not compile).
  const reads = proxyReads(db);
  const catalog = new Catalog(reads, new SecretBox(config.keyring), config.builtinEndpoints);
  catalog.listen(bus.nc, bus.subjects, log);
  // Legacy servers ask by pushing elicitation/create during a call: held here while a person answers.
  const legacyAsks = new LegacyAsks();
  const pool = connectionPool({ config, db: reads, bus, log, telemetry, outboundFetch, idleMs: opts.idleMs ?? config.proxy.idleMs }, legacyAsks);
  const limits = { maxConcurrency: config.proxy.maxConcurrencyPerServer, ratePerSecond: config.proxy.ratePerServer };
  const maxPayload = bus.nc.info?.max_payload ?? 1024 * 1024;
  const { approvals, inputs } = callGates({ config, bus, redis, log, telemetry });
  const handler = new CallHandler({
    catalog,
    pool,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    limiter,
    limits,
    instance,
    replyLimits: replyLimits(maxPayload),
    approvals,
    inputs,
    legacyAsks,
    oauth: new OAuthTokens({ nc: bus.nc, subjects: bus.subjects, catalog, tracer: telemetry.tracer, meter: telemetry.meter }),
    log,
    progress: new ProgressRelay((subject, value) => bus.notify(subject, value), bus.subjects, telemetry.meter),
  });
  const stats = (): ProxyStats => ({ instance, ...pool.stats, inflight: handler.inflightCount, ...handler.counts, invalidations: catalog.invalidations });

  const service = await startCallService({ nc: bus.nc, subjects: bus.subjects, instance, handler, stats, log });
  // Core-NATS notifications, decoded strictly: one that does not decode is logged (without its
  // bytes) and dropped, and nothing a handler throws reaches the connection.
  const subs = [
    bus.listen(bus.subjects.proxyCancel, payload(decodeProxyCancel), (c) => handler.cancel(c.account, c.run, c.callId), { what: 'cancel' }),
    // Only the instance working on the call answers: silence means "not here".
    bus.listen(
      bus.subjects.proxyCallHeld,
      payload(decodeProxyCancel),
      (c, msg) => {
        if (handler.holds(c.account, c.run, c.callId)) respond(msg, { instance });
      },
      { what: 'held check' },
    ),
    bus.listen(bus.subjects.runEndedAll, payload(decodeRunEnded), (e) => void pool.endRun(e.account, e.run), { what: 'run-ended' }),
  ];
  await bus.nc.flush();
  let ready = true;
  const health = await startServiceHttp({
    port: config.httpPort,
    host: config.httpHost,
    internalPort: config.internalHttpPort,
    internalHost: config.internalHttpHost,
    service: 'proxy',
    isReady: () => ready,
    metricsHandler: telemetry.metricsHandler,
    extra: { '/stats': () => ({ ...stats(), cpu: process.cpuUsage(), rss: process.memoryUsage.rss() }) },
  });
  log.info('proxy ready', { instance, health: health.url, internal: health.internalUrl, natsService: service.name, limits });
  let stopping: Promise<void> | undefined;
  return {
    healthUrl: health.url,
    internalUrl: health.internalUrl,
    instance,
    stats,
    stop: () =>
      (stopping ??= (async () => {
        ready = false;
        await service.stop().catch((err: unknown) => log.warn('service stop failed', { err: err as Error }));
        for (const s of subs) s.unsubscribe();
        catalog.close();
        await pool.closeAll();
        await health.close();
        await bus.close();
        await limiter.close();
        redis.disconnect();
        await db.destroy();
        await outboundFetch.close();
        if (opts.telemetry === undefined) await telemetry.shutdown();
      })()),
  };
}
