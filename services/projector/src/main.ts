import { connectBus } from '@mcpx/bus';
import { loadConfig } from '@mcpx/config';
import { createDb, migrate } from '@mcpx/db';
import { createLogger } from '@mcpx/log';
import { setupTelemetry, startHealthServer } from '@mcpx/telemetry';
import { serveAgentTools } from './agent-tools.read.js';
import { startEventConsumer } from './event-consumer.js';
import { Projection } from './projection.js';

async function main(): Promise<void> {
  const config = loadConfig('projector', process.env);
  const log = createLogger('projector', { level: config.logLevel, fields: { instance: config.instanceId } });
  const telemetry = await setupTelemetry({ serviceName: 'projector', serviceInstanceId: config.instanceId, ...(config.otlpEndpoint ? { otlpEndpoint: config.otlpEndpoint } : {}) });
  const db = createDb(config.databaseUrl, { applicationName: 'projector', max: 10 });
  await migrate(db, 'projector');
  const bus = await connectBus({ url: config.natsUrl, name: `projector ${config.instanceId}`, prefix: config.natsPrefix });
  const projection = new Projection({ db, bus, log, tracer: telemetry.tracer, meter: telemetry.meter, style: config.toolNameStyle });
  const reads = serveAgentTools(bus, db);
  const consumer = await startEventConsumer({ bus, projection, log, concurrency: 8 });
  let ready = true;
  const health = await startHealthServer({ port: config.httpPort, host: config.httpHost, service: 'projector', isReady: () => ready, metricsHandler: telemetry.metricsHandler });
  log.info('projector ready', { health: health.url });
  const shutdown = async (): Promise<void> => {
    ready = false;
    reads.unsubscribe();
    await consumer.stop();
    await health.close();
    await bus.close();
    await db.destroy();
    await telemetry.shutdown();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());
}

main().catch((err: unknown) => {
  process.stderr.write(`projector failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
