import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { connectBus, payload } from '@mcpx/bus';
import type { Config } from '@mcpx/config';
import { decodeProxyCancel, decodeRunEnded, encodePayload, type Reply, type ToolsObserved } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { ApprovalStore, CallLimiter, InputStore } from '@mcpx/locks';
import { createLogger, type LogSink } from '@mcpx/log';
import { CONNECTOR_CAPABILITIES, type ElicitRequestParams, type McpConnection } from '@mcpx/mcp-client';
import { SecretBox } from '@mcpx/secrets';
import { createOutboundFetch } from '@mcpx/outbound';
import { responseCutRecorder, setupTelemetry, startServiceHttp, traceCarrier, tracingFetch, tracingRequest, type Telemetry } from '@mcpx/telemetry';
import { ApprovalGate } from './approval-gate.js';
import { InputGate } from './input-requests.js';
import { LegacyAsks } from './legacy-inputs.js';
import { CallHandler, replyLimits } from './call-handler.js';
import { registerWaitingGauges } from './waiting-gauges.js';
import { Catalog } from './catalog.js';
import { ConnectionPool } from './connection-pool.js';
import type { VerdictReport } from './connection-pool.js';
import { StoredEraVerdicts } from './era-verdicts.js';
import { OAuthTokens } from './oauth-tokens.js';
import { startCallService, type ProxyStats } from './call-service.js';

export { PROXY_SERVICE_NAME, proxyServiceName } from './call-service.js';
export { CALL_REQUEST_LIMITS, MAX_CALL_TIMEOUT_MS, MAX_REQUEST_BYTES, decodeCallRequest, parseCallRequest } from './call-request.js';
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
  // Admission must not queue behind a Redis outage: fail fast (and open) instead.
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1_000, lazyConnect: true });
  redis.on('error', () => {});
  await redis.connect().catch((err: unknown) => log.warn('redis unavailable: per-server limits fail open until it answers', { err: err as Error }));
  let lastLimiterWarning = 0;
  const limiter = new CallLimiter(redis, config.redisPrefix, {
    onError: (err) => {
      if (Date.now() - lastLimiterWarning < 10_000) return;
      lastLimiterWarning = Date.now();
      log.warn('per-server limits unavailable, admitting calls', { err });
    },
  });
  // A body cut at a bound is counted, and the call's span says why its answer stopped short.
  const outboundFetch = createOutboundFetch(config.outbound, { onResponseCut: responseCutRecorder(telemetry.meter) });
  const catalog = new Catalog(db, new SecretBox(config.keyring), config.builtinEndpoints);
  catalog.listen(bus.nc, bus.subjects, log);

  // Quiet discovery: every connection's opening lists tools for the registry. The same list seen
  // again within a short while is not sent again, unless it carries a verdict the connection had
  // to probe for: the registry stores that, so every other instance connects with no probe.
  const lastObserved = new Map<string, { hash: string; at: number }>();
  const observe = (account: string, server: string, conn: McpConnection, report?: VerdictReport): void => {
    conn
      .listTools()
      .then((tools) => {
        const key = `${account}:${server}`;
        const hash = createHash('sha256').update(JSON.stringify(tools)).digest('hex');
        const last = lastObserved.get(key);
        if (report === undefined && last && last.hash === hash && Date.now() - last.at < 30_000) return;
        lastObserved.set(key, { hash, at: Date.now() });
        if (lastObserved.size > 10_000) lastObserved.delete(lastObserved.keys().next().value as string);
        const msg: ToolsObserved = { account, server, tools, transport: conn.transport, ...(report ?? {}) };
        bus.nc.publish(bus.subjects.toolsObserved, encodePayload(msg));
      })
      .catch((err: unknown) => log.warn('quiet discovery list failed', { account, server, err: err as Error }));
  };
  // Legacy servers ask by pushing elicitation/create during a call: held here while a person answers.
  const legacyAsks = new LegacyAsks();
  const pool = new ConnectionPool(
    {
      connectTimeoutMs: 30_000,
      idleMs: opts.idleMs ?? config.proxy.idleMs,
      tracer: telemetry.tracer,
      fetch: tracingFetch(outboundFetch),
      // Legacy direct calls take undici's request path (no WHATWG layer), traced like the fetch.
      request: tracingRequest(outboundFetch.request),
      traceCarrier,
      // What the connector answers mid-call: a person or the runtime answers elicitations, the
      // runtime samples (a call whose runtime does not is refused, saying so); roots are not shared.
      // Discovery declares the same, so both see the same tools.
      capabilities: CONNECTOR_CAPABILITIES,
      verdicts: new StoredEraVerdicts(db),
      // Per instance: a runtime's proxy client routes a refused new run to another instance.
      maxRuns: config.quotas.runsPerProxy,
      maxConnections: config.quotas.connectionsPerProxy,
    },
    {
      onOpen: observe,
      onToolsChanged: (a, s, c) => {
        lastObserved.delete(`${a}:${s}`);
        observe(a, s, c);
      },
      onVerdict: (a, s, c, r) => {
        lastObserved.delete(`${a}:${s}`);
        observe(a, s, c, r);
      },
      ...(config.proxy.legacyElicitation === false
        ? {}
        : { onElicitation: (conn: McpConnection | undefined, params: ElicitRequestParams, signal: AbortSignal) => legacyAsks.onElicitation(conn, params, signal) }),
      // A legacy server's pushed sampling goes to a runtime that samples (else the call fails, saying so).
      onSampling: (conn, params, signal) => legacyAsks.onSampling(conn, params, signal),
    },
    telemetry.meter,
  );
  const limits = { maxConcurrency: config.proxy.maxConcurrencyPerServer, ratePerSecond: config.proxy.ratePerServer };
  const maxPayload = bus.nc.info?.max_payload ?? 1024 * 1024;
  // always_ask calls stop for a human; approvals live in Redis, shared with the registry. Unlike
  // the limiter, a Redis outage fails closed here: such a call is refused, never run unasked.
  const approvalStore = new ApprovalStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs });
  const inputStore = new InputStore(redis, config.redisPrefix, { ttlMs: config.approvalTtlMs });
  registerWaitingGauges(telemetry.meter, { approvals: approvalStore, inputs: inputStore }, log);
  const approvals = new ApprovalGate({
    store: approvalStore,
    publish: (subject, payload) => bus.nc.publish(subject, payload),
    subject: (account) => bus.subjects.approvalRequested(account),
    maxPendingPerAgent: config.quotas.pendingApprovalsPerAgent,
    maxPendingPerAccount: config.quotas.pendingApprovalsPerAccount,
    meter: telemetry.meter,
  });
  // Servers' questions (input_required): recorded in Redis with expiry, the server's requestState
  // sealed with the deployment's key ring, answered by a person (the registry) or the runtime.
  const inputs = new InputGate({
    store: inputStore,
    box: new SecretBox(config.keyring),
    publish: (subject, payload) => bus.nc.publish(subject, payload),
    subject: (account) => bus.subjects.inputRequested(account),
    maxPendingPerAgent: config.quotas.pendingApprovalsPerAgent,
    maxPendingPerAccount: config.quotas.pendingInputsPerAccount,
    meter: telemetry.meter,
  });
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
        if (handler.holds(c.account, c.run, c.callId)) msg.respond(encodePayload({ ok: true, value: { instance } } satisfies Reply<{ instance: string }>));
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
