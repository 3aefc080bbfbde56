import { JetStreamPublisher, connectBus, retryStartup, type Bus } from '@mcpx/bus';
import { busConnection, type Config } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { createLogger, type Logger, type LogSink } from '@mcpx/log';
import { consumerBacklogGauge, setupTelemetry, startServiceHttp, type Telemetry } from '@mcpx/telemetry';
import { serveAgentTools } from './agent-tools.read.js';
import { ChangeLog } from './change-log.js';
import { DEFAULT_ACK_WAIT_MS, PROJECTOR_DURABLE, startEventConsumer } from './event-consumer.js';
import { LambdaTools, serveLambdaTools } from './lambda-tools.js';
import { Projection } from './projection.js';
import { backfillSearchText, serveToolSearch } from './tool-search.js';

export interface ProjectorOptions {
  telemetry?: Telemetry;
  logSink?: LogSink;
  /** How long JetStream waits for an event's ack before redelivering it (default 30 s). */
  ackWaitMs?: number;
  /** Events handled at once by this instance (default 8). */
  concurrency?: number;
  /** agent-tools-changed messages awaiting their PubAck at once (default 5,000). */
  publishWindow?: number;
}

export interface RunningProjector {
  /** The public port: `/healthz` only. */
  healthUrl: string;
  /** The internal port (`INTERNAL_HTTP_PORT`): `/healthz` and `/metrics`. */
  internalUrl: string;
  instance: string;
  stop(): Promise<void>;
}

/** Wires the projector from its configuration and starts consuming. */
export async function startProjector(config: Config, opts: ProjectorOptions = {}): Promise<RunningProjector> {
  const log = createLogger('projector', {
    level: config.logLevel,
    fields: { instance: config.instanceId },
    ...(opts.logSink ? { sink: opts.logSink } : {}),
  });
  const telemetry =
    opts.telemetry ??
    (await setupTelemetry({
      serviceName: 'projector',
      serviceInstanceId: config.instanceId,
      ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}),
    }));
  const db = createDb(config.databaseUrl, {
    applicationName: 'projector',
    max: 10,
    onIdleError: (err) => log.warn('database connection dropped', { err }),
  });
  await migrate(db, 'projector');
  await backfillSearchText(db, log);
  const bus = await connectProjectorBus(config, log);
  const publisher = new JetStreamPublisher(bus.nc, bus.inboxPrefix, () => bus.traceHeaders(), {
    log,
    ...(opts.publishWindow ? { window: opts.publishWindow } : {}),
  });
  const changes = new ChangeLog({ db, bus, log, publisher, meter: telemetry.meter, tracer: telemetry.tracer });
  const projection = new Projection({
    db,
    log,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    style: config.toolNameStyle,
    changes,
  });
  const subs = [
    serveAgentTools(bus, db, config.toolNameStyle),
    serveToolSearch(bus, db),
    ...serveLambdaTools(bus, new LambdaTools({ db, log, changes })),
  ];
  const ackWaitMs = opts.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
  // The durable consumer is JetStream's too: a node still catching up may time it out (waited out like the streams).
  const consumer = await retryStartup(
    'consumer',
    () => startEventConsumer({ bus, projection, log, concurrency: opts.concurrency ?? 8, ackWaitMs }),
    { log },
  );
  reportBacklog(telemetry, bus);
  const sweeper = sweepOpenChanges(changes, ackWaitMs, log);
  let ready = true;
  const health = await startServiceHttp({
    port: config.httpPort,
    host: config.httpHost,
    internalPort: config.internalHttpPort,
    internalHost: config.internalHttpHost,
    service: 'projector',
    isReady: () => ready,
    metricsHandler: telemetry.metricsHandler,
  });
  log.info('projector ready', { health: health.url, internal: health.internalUrl });
  return {
    healthUrl: health.url,
    internalUrl: health.internalUrl,
    instance: config.instanceId,
    stop: async () => {
      ready = false;
      sweeper.stop();
      for (const sub of subs) sub.unsubscribe();
      await consumer.stop();
      await sweeper.settled();
      publisher.close();
      await health.close();
      await bus.close();
      await db.destroy();
      if (opts.telemetry === undefined) await telemetry.shutdown();
    },
  };
}

function connectProjectorBus(config: Config, log: Logger): Promise<Bus> {
  return connectBus({ ...busConnection(config), name: `projector ${config.instanceId}`, log });
}

/**
 * Projector lag: the shared durable consumer's backlog, read from JetStream at each scrape
 * (mcpx_consumer_backlog{consumer="projector",state}; every instance reports the same consumer).
 */
function reportBacklog(telemetry: Telemetry, bus: Bus): void {
  consumerBacklogGauge(telemetry.meter, PROJECTOR_DURABLE, async () => {
    const info = await bus.jsm.consumers.info(bus.subjects.mcpEventsStream, PROJECTOR_DURABLE);
    return { pending: info.num_pending, ackPending: info.num_ack_pending };
  });
}

/** Changes left open by an instance that died are published again (their events keep their ids). */
function sweepOpenChanges(
  changes: ChangeLog,
  ackWaitMs: number,
  log: Logger,
): { stop(): void; settled(): Promise<unknown> } {
  let sweeping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    sweeping = changes
      .sweep(4 * ackWaitMs)
      .catch((err: unknown) => log.warn('sweep of open changes failed', { err: err as Error }));
  }, 2 * ackWaitMs);
  return { stop: () => clearInterval(timer), settled: () => sweeping };
}
