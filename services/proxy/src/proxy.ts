import { createHash } from 'node:crypto';
import { connectBus } from '@mcpx/bus';
import type { Config } from '@mcpx/config';
import { QueueGroups, decodePayload, encodePayload, toWireError, type ProxyCallReply, type ProxyCancel, type RunEnded, type ToolsObserved } from '@mcpx/contracts';
import { createDb } from '@mcpx/db';
import { createLogger, type LogSink } from '@mcpx/log';
import type { McpConnection } from '@mcpx/mcp-client';
import { SecretBox } from '@mcpx/secrets';
import { createOutboundFetch } from '@mcpx/outbound';
import { extractTraceContext, setupTelemetry, startHealthServer, tracingFetch, type Telemetry } from '@mcpx/telemetry';
import { context } from '@opentelemetry/api';
import type { Msg } from '@nats-io/transport-node';
import { CallHandler } from './call-handler.js';
import { Catalog } from './catalog.js';
import { ConnectionPool } from './connection-pool.js';

export interface ProxyOptions {
  telemetry?: Telemetry;
  logSink?: LogSink;
  /** Idle time after which a run's pool closes (default 5 minutes). */
  idleMs?: number;
}

export interface RunningProxy {
  healthUrl: string;
  instance: string;
  stats(): { runs: number; connections: number; inflight: number };
  stop(): Promise<void>;
}

/** Wires the proxy from its configuration and starts answering calls. */
export async function startProxy(config: Config, opts: ProxyOptions = {}): Promise<RunningProxy> {
  const instance = config.instanceId.replace(/[^A-Za-z0-9_-]/g, '_');
  const log = createLogger('proxy', { level: config.logLevel, fields: { instance }, ...(opts.logSink ? { sink: opts.logSink } : {}) });
  const telemetry = opts.telemetry ?? await setupTelemetry({ serviceName: 'proxy', serviceInstanceId: instance, ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}) });
  const db = createDb(config.databaseUrl, { applicationName: 'proxy', max: 10 });
  const bus = await connectBus({ url: config.natsUrl, name: `proxy ${instance}`, prefix: config.natsPrefix });
  const outboundFetch = createOutboundFetch(config.outbound);
  const catalog = new Catalog(db, new SecretBox(config.keyring));
  catalog.listen(bus.nc, bus.subjects);

  // Quiet discovery: every connection's opening lists tools for the registry. The same list seen
  // again within a short while is not sent again.
  const lastObserved = new Map<string, { hash: string; at: number }>();
  const observe = (account: string, server: string, conn: McpConnection): void => {
    conn
      .listTools()
      .then((tools) => {
        const key = `${account}:${server}`;
        const hash = createHash('sha256').update(JSON.stringify(tools)).digest('hex');
        const last = lastObserved.get(key);
        if (last && last.hash === hash && Date.now() - last.at < 30_000) return;
        lastObserved.set(key, { hash, at: Date.now() });
        const msg: ToolsObserved = { account, server, tools, transport: conn.transport };
        bus.nc.publish(bus.subjects.toolsObserved, encodePayload(msg));
      })
      .catch((err: unknown) => log.warn('quiet discovery list failed', { account, server, err: err as Error }));
  };
  const pool = new ConnectionPool(
    { connectTimeoutMs: 30_000, idleMs: opts.idleMs ?? 300_000, fetch: tracingFetch(outboundFetch) },
    { onOpen: observe, onToolsChanged: (a, s, c) => { lastObserved.delete(`${a}:${s}`); observe(a, s, c); } },
    telemetry.meter,
  );
  const handler = new CallHandler({ catalog, pool, tracer: telemetry.tracer, meter: telemetry.meter });

  const onCall = (err: Error | null, msg: Msg): void => {
    if (err) return;
    void context.with(extractTraceContext(msg.headers), async () => {
      let reply: ProxyCallReply;
      try {
        reply = { ok: true, instance, result: await handler.handle(decodePayload(msg.data)) };
      } catch (e) {
        reply = { ok: false, instance, error: toWireError(e).toJSON() };
      }
      msg.respond(encodePayload(reply));
    });
  };
  const subs = [
    bus.nc.subscribe(bus.subjects.proxyCall, { queue: QueueGroups.proxy, callback: onCall }),
    bus.nc.subscribe(bus.subjects.proxyInstanceCall(instance), { callback: onCall }),
    bus.nc.subscribe(bus.subjects.proxyCancel, {
      callback: (err, msg) => {
        if (err) return;
        try {
          const c = decodePayload<ProxyCancel>(msg.data);
          if (typeof c.account === 'string' && typeof c.run === 'string' && typeof c.callId === 'string') handler.cancel(c.account, c.run, c.callId);
        } catch {
          log.warn('dropped a malformed cancel');
        }
      },
    }),
    bus.nc.subscribe(bus.subjects.runEndedAll, {
      callback: (err, msg) => {
        if (err) return;
        try {
          const e = decodePayload<RunEnded>(msg.data);
          if (typeof e.account === 'string' && typeof e.run === 'string') void pool.endRun(e.account, e.run);
        } catch {
          log.warn('dropped a malformed run-ended');
        }
      },
    }),
  ];
  await bus.nc.flush();
  let ready = true;
  const health = await startHealthServer({
    port: config.httpPort,
    host: config.httpHost,
    service: 'proxy',
    isReady: () => ready,
    metricsHandler: telemetry.metricsHandler,
    extra: { '/stats': () => ({ instance, ...pool.stats, inflight: handler.inflightCount }) },
  });
  log.info('proxy ready', { instance, health: health.url });
  return {
    healthUrl: health.url,
    instance,
    stats: () => ({ ...pool.stats, inflight: handler.inflightCount }),
    stop: async () => {
      ready = false;
      for (const s of subs) s.unsubscribe();
      catalog.close();
      await pool.closeAll();
      await health.close();
      await bus.close();
      await db.destroy();
      await outboundFetch.close();
      if (opts.telemetry === undefined) await telemetry.shutdown();
    },
  };
}
