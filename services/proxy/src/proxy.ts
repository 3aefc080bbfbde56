import { connectBus, payload, respond } from '@mcpx/bus';
import { decodeProxyCancel, decodeRunEnded } from '@mcpx/contracts';
import { busConnection, type Config } from '@mcpx/config';
import { proxyReads } from '@mcpx/stored';
import { createDb, migrate } from '@mcpx/db';
import { createLogger, type LogSink } from '@mcpx/log';
import { SecretBox } from '@mcpx/secrets';
import { createOutboundFetch } from '@mcpx/outbound';
import { responseCutRecorder, serviceTelemetry, startServiceHttp, tracingFetch, type Telemetry } from '@mcpx/telemetry';
import { LegacyAsks } from './legacy-inputs.js';
import { CallHandler } from './call-handler.js';
import { replyLimits } from './reply-limits.js';
import { Catalog } from './catalog.js';
import { ProgressRelay } from './progress-relay.js';
import { LogRelay } from './log-relay.js';
import { OAuthTokens } from './oauth-tokens.js';
import { startCallService, type ProxyStats } from './call-service.js';
import { RelayRequests } from './relay-requests.js';
import { UpstreamWatches } from './upstream-watches.js';
import { UpstreamContexts } from './watch-contexts.js';
import { StoredEraVerdicts } from './era-verdicts.js';
import { ActivityRecorder } from './activity-recorder.js';
import { PostgresActivityStore } from './activity-store.js';
import { callGates, callLimiter, connectRedis, connectionPool } from './wiring.js';
import { brokeredTasks } from './task-wiring.js';
import { startTaskService } from './tasks/task-service.js';

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
  const floor = await openFloor(config, opts);
  const path = await callPath(config, opts, floor);
  const { instance, log, telemetry } = floor;
  const { handler, pool } = path;
  const stats = (): ProxyStats & { taskStatements: number; taskWaitsWokenElsewhere: number } => ({
    instance,
    ...pool.stats,
    inflight: handler.inflightCount,
    ...handler.counts,
    invalidations: floor.catalog.invalidations,
    liveTasks: path.broker.liveCount,
    // Statements of the task store (an idle proxy sends none while no task is due), and calls woken
    // by the end of their task on another instance (docs/tasks.md#the-broker).
    taskStatements: path.taskStore.statements,
    taskWaitsWokenElsewhere: path.broker.wokenElsewhere,
  });
  const nats = await serveNats(floor, path, stats);
  await floor.bus.nc.flush();
  let ready = true;
  const health = await startProxyHttp(config, telemetry, stats, () => ready);
  log.info('proxy ready', {
    instance,
    health: health.url,
    internal: health.internalUrl,
    natsService: nats.service.name,
    limits: path.limits,
  });
  let stopping: Promise<void> | undefined;
  return {
    healthUrl: health.url,
    internalUrl: health.internalUrl,
    instance,
    stats,
    stop: () =>
      (stopping ??= (async () => {
        ready = false;
        await nats.stop();
        floor.catalog.close();
        await pool.closeAll();
        await path.activity?.stop();
        await health.close();
        await floor.bus.close();
        await floor.limiter.close();
        floor.redis.disconnect();
        await floor.db.destroy();
        await floor.outboundFetch.close();
        if (opts.telemetry === undefined) await telemetry.shutdown();
      })()),
  };
}

type Floor = Awaited<ReturnType<typeof openFloor>>;
type CallPath = Awaited<ReturnType<typeof callPath>>;

/** What every part stands on: the logger, telemetry, Postgres (its schema migrated), NATS, Redis, the outbound fetch, the catalog. */
async function openFloor(config: Config, opts: ProxyOptions) {
  const instance = config.instanceId.replace(/[^A-Za-z0-9_-]/g, '_');
  const log = createLogger('proxy', {
    level: config.logLevel,
    fields: { instance },
    ...(opts.logSink ? { sink: opts.logSink } : {}),
  });
  const telemetry = await serviceTelemetry(opts.telemetry, 'proxy', instance, config.otlpEndpoint);
  const db = createDb(config.databaseUrl, {
    applicationName: 'proxy',
    max: 10,
    onIdleError: (err) => log.warn('database connection dropped', { err }),
  });
  // The proxy's own schema: the tasks it brokers (docs/tasks.md).
  await migrate(db, 'proxy');
  const bus = await connectBus({ ...busConnection(config), name: `proxy ${instance}`, log });
  const redis = await connectRedis(config, log);
  const limiter = callLimiter(redis, config, log);
  // A body cut at a bound is counted, and the call's span says why its answer stopped short.
  const outboundFetch = createOutboundFetch(config.outbound, { onResponseCut: responseCutRecorder(telemetry.meter) });
  // The proxy reads the owners' tables its read model names, and writes none (a write does not compile).
  const reads = proxyReads(db);
  const catalog = new Catalog(reads, new SecretBox(config.keyring), config.builtinEndpoints);
  catalog.listen(bus.nc, bus.subjects, log);
  return { instance, log, telemetry, db, bus, redis, limiter, outboundFetch, reads, catalog };
}

/** The call path: the pool, the gates, the tokens, the call log, the task broker and the handler over them. */
async function callPath(config: Config, opts: ProxyOptions, f: Floor) {
  const { instance, log, telemetry, db, bus, redis, limiter, outboundFetch, reads, catalog } = f;
  // Legacy servers ask by pushing elicitation/create during a call: held here while a person answers.
  const legacyAsks = new LegacyAsks();
  const pool = connectionPool(
    { config, db: reads, bus, log, telemetry, outboundFetch, idleMs: opts.idleMs ?? config.proxy.idleMs },
    legacyAsks,
  );
  const limits = { maxConcurrency: config.proxy.maxConcurrencyPerServer, ratePerSecond: config.proxy.ratePerServer };
  const maxPayload = bus.nc.info?.max_payload ?? 1024 * 1024;
  const { approvals, inputs } = callGates({ config, bus, redis, log, telemetry });
  const oauth = new OAuthTokens({
    nc: bus.nc,
    subjects: bus.subjects,
    catalog,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
  });
  // The call log (docs/activity.md): written by proxies in batches, read by the registry's ListCalls.
  const activity = config.activity.enabled ? await startActivity(config, db, telemetry, log) : undefined;
  const limitsOfReply = replyLimits(maxPayload);
  // Brokered tasks: rows in Postgres, polled under a lease by one instance at a time.
  const { taskStore, broker, taskCalls } = brokeredTasks({
    config,
    db,
    instance,
    catalog,
    outboundFetch,
    bus,
    telemetry,
    log,
    pool,
    inputs,
    limitsOfReply,
  });
  const handler = new CallHandler({
    catalog,
    pool,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    limiter,
    limits,
    instance,
    replyLimits: limitsOfReply,
    tasks: taskCalls,
    approvals,
    inputs,
    legacyAsks,
    oauth,
    log,
    progress: new ProgressRelay((subject, value) => bus.notify(subject, value), bus.subjects, telemetry.meter),
    logs: new LogRelay((subject, value) => bus.notify(subject, value), bus.subjects, telemetry.meter),
    ...(activity !== undefined ? { activity } : {}),
  });
  return { pool, limits, maxPayload, inputs, oauth, activity, taskStore, broker, handler };
}

/** What the proxy serves on NATS: calls, relayed requests, upstream watches, tasks, notices; and their stop, in order. */
async function serveNats(f: Floor, p: CallPath, stats: () => ProxyStats) {
  const { instance, log, telemetry, bus, outboundFetch, reads, catalog } = f;
  const { handler, pool, inputs, broker } = p;
  const service = await startCallService({ nc: bus.nc, subjects: bus.subjects, instance, handler, stats, log });
  // Resources, prompts and completions of granted servers (the agent endpoint's): ./relay-requests.ts.
  const relay = new RelayRequests({
    nc: bus.nc,
    subjects: bus.subjects,
    instance,
    catalog,
    pool,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    oauth: p.oauth,
    maxPayload: p.maxPayload,
    log,
    inputs,
  });
  relay.start();
  // The endpoint's upstream subscriptions (resource updates, list changes): ./upstream-watches.ts.
  const watches = upstreamWatches({ bus, instance, catalog, telemetry, log, outboundFetch, reads });
  watches.start();
  const taskService = startTaskService({
    nc: bus.nc,
    subjects: bus.subjects,
    store: p.taskStore,
    broker,
    log,
    inputs,
    tracer: telemetry.tracer,
  });
  broker.start();
  const subs = listenNotices(bus, handler, pool, instance);
  return {
    service,
    stop: async (): Promise<void> => {
      await service.stop().catch((err: unknown) => log.warn('service stop failed', { err: err as Error }));
      relay.stop();
      await watches.stop();
      taskService.unsubscribe();
      await broker.stop();
      for (const s of subs) s.unsubscribe();
    },
  };
}

/**
 * The call log's recorder, its table brought up to date first (the registry does the same: whichever
 * starts first). A database that does not answer now does not stop the proxy: the recorder holds
 * calls and retries, and the migration is tried again at the next start.
 */
async function startActivity(
  config: Config,
  db: ReturnType<typeof createDb>,
  telemetry: Telemetry,
  log: ReturnType<typeof createLogger>,
): Promise<ActivityRecorder> {
  await migrate(db, 'activity').catch((err: unknown) =>
    log.warn('call log migration failed: calls are held and retried', { err: err as Error }),
  );
  const a = config.activity;
  return new ActivityRecorder({
    store: new PostgresActivityStore(db),
    meter: telemetry.meter,
    tracer: telemetry.tracer,
    log,
    buffer: a.buffer,
    flushMs: a.flushMs,
    retention: { days: a.retentionDays, maxCallsPerAccount: a.maxCallsPerAccount, everyMs: a.pruneMs },
  }).start();
}

/**
 * Core-NATS notifications, decoded strictly: one that does not decode is logged (without its
 * bytes) and dropped, and nothing a handler throws reaches the connection.
 */
function listenNotices(
  bus: Awaited<ReturnType<typeof connectBus>>,
  handler: CallHandler,
  pool: ReturnType<typeof connectionPool>,
  instance: string,
): { unsubscribe(): void }[] {
  return [
    bus.listen(
      bus.subjects.proxyCancel,
      payload(decodeProxyCancel),
      (c) => handler.cancel(c.account, c.run, c.callId),
      { what: 'cancel' },
    ),
    // Only the instance working on the call answers: silence means "not here".
    bus.listen(
      bus.subjects.proxyCallHeld,
      payload(decodeProxyCancel),
      (c, msg) => {
        if (handler.holds(c.account, c.run, c.callId)) respond(msg, { instance });
      },
      { what: 'held check' },
    ),
    bus.listen(bus.subjects.runEndedAll, payload(decodeRunEnded), (e) => void pool.endRun(e.account, e.run), {
      what: 'run-ended',
    }),
  ];
}

/**
 * The endpoint's upstream subscriptions, on connections of their own per auth context (not the
 * runs' pooled ones), reaching each server with the era verdicts the registry stored.
 */
function upstreamWatches(d: {
  bus: Awaited<ReturnType<typeof connectBus>>;
  instance: string;
  catalog: Catalog;
  telemetry: Telemetry;
  log: ReturnType<typeof createLogger>;
  outboundFetch: ReturnType<typeof createOutboundFetch>;
  reads: ReturnType<typeof proxyReads>;
}): UpstreamWatches {
  const contexts = new UpstreamContexts({
    connectTimeoutMs: 30_000,
    fetch: tracingFetch(d.outboundFetch),
    verdicts: new StoredEraVerdicts(d.reads),
  });
  return new UpstreamWatches({
    nc: d.bus.nc,
    subjects: d.bus.subjects,
    instance: d.instance,
    catalog: d.catalog,
    contexts,
    tracer: d.telemetry.tracer,
    meter: d.telemetry.meter,
    log: d.log,
  });
}

/**
 * The proxy's HTTP: `/healthz` on the public port; on the internal one also `/metrics`, `/stats`
 * (counts, CPU, memory split) and `/stats/collected`, the same after a full collection when the
 * process runs with `--expose-gc` (a bench's measure of what is live; else none is forced).
 */
function startProxyHttp(
  config: Config,
  telemetry: Telemetry,
  stats: () => ProxyStats,
  isReady: () => boolean,
): ReturnType<typeof startServiceHttp> {
  return startServiceHttp({
    port: config.httpPort,
    host: config.httpHost,
    internalPort: config.internalHttpPort,
    internalHost: config.internalHttpHost,
    service: 'proxy',
    isReady,
    metricsHandler: telemetry.metricsHandler,
    extra: {
      '/stats': () => ({ ...stats(), cpu: process.cpuUsage(), ...memoryNow() }),
      '/stats/collected': () => ({ ...stats(), cpu: process.cpuUsage(), ...memoryNow(collect()) }),
    },
  });
}

/** A full collection, when the process was started with `--expose-gc` (else nothing): whether it ran. */
function collect(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  return gc !== undefined;
}

/** The process's memory, split: resident, the JS heap used and reserved, memory outside it (buffers). */
function memoryNow(collected?: boolean): Record<string, number | boolean> {
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, heapTotal, external, arrayBuffers, ...(collected !== undefined ? { collected } : {}) };
}
