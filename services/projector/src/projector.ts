import { connectBus } from '@mcpx/bus';
import type { Config } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { createLogger, type LogSink } from '@mcpx/log';
import { setupTelemetry, startHealthServer, type Telemetry } from '@mcpx/telemetry';
import { serveAgentTools } from './agent-tools.read.js';
import { startEventConsumer } from './event-consumer.js';
import { Projection } from './projection.js';

export interface ProjectorOptions {
  telemetry?: Telemetry;
  logSink?: LogSink;
}

export interface RunningProjector {
  healthUrl: string;
  instance: string;
  stop(): Promise<void>;
}

/** Wires the projector from its configuration and starts consuming. */
export async function startProjector(config: Config, opts: ProjectorOptions = {}): Promise<RunningProjector> {
  const log = createLogger('projector', { level: config.logLevel, fields: { instance: config.instanceId }, ...(opts.logSink ? { sink: opts.logSink } : {}) });
  const telemetry = opts.telemetry ?? await setupTelemetry({ serviceName: 'projector', serviceInstanceId: config.instanceId, ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}) });
  const db = createDb(config.databaseUrl, { applicationName: 'projector', max: 10 });
  await migrate(db, 'projector');
  const bus = await connectBus({ url: config.natsUrl, name: `projector ${config.instanceId}`, prefix: config.natsPrefix });
  const projection = new Projection({ db, bus, log, tracer: telemetry.tracer, meter: telemetry.meter, style: config.toolNameStyle });
  const reads = serveAgentTools(bus, db);
  const consumer = await startEventConsumer({ bus, projection, log, concurrency: 8 });
  let ready = true;
  const health = await startHealthServer({ port: config.httpPort, host: config.httpHost, service: 'projector', isReady: () => ready, metricsHandler: telemetry.metricsHandler });
  log.info('projector ready', { health: health.url });
  return {
    healthUrl: health.url,
    instance: config.instanceId,
    stop: async () => {
      ready = false;
      reads.unsubscribe();
      await consumer.stop();
      await health.close();
      await bus.close();
      await db.destroy();
      if (opts.telemetry === undefined) await telemetry.shutdown();
    },
  };
}
