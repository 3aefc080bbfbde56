import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { makeSubjects, type Subjects } from '@mcpx/contracts';
import { ProxyClient } from '@mcpx/proxy-client';
import { installTraceContext, setupTelemetry, type Telemetry, type TraceContextKind } from '@mcpx/telemetry';
import { ApiClient } from './api-client.js';
import { serviceUrls } from './env.js';
import { InProcessSystem } from './system.js';

/** The services in this process, their spans read through `exporter`, and a runtime's client of the proxy. */
export interface TracedSystem {
  telemetry: Telemetry;
  system: InProcessSystem;
  nc: NatsConnection;
  subjects: Subjects;
  proxy: ProxyClient;
  api: ApiClient;
  /** Stops what {@link startTracedSystem} started and puts the test process's trace context back (`async`). */
  stop(): Promise<void>;
}

/**
 * The services in this process with the trace context `kind` (`explicit`, the endpoint's and the
 * proxy's in production: it does not follow awaits; `async`, a process shared with others), every
 * span exported to `exporter`: what the trace tests of the call path run against.
 */
export async function startTracedSystem(
  kind: TraceContextKind,
  serviceName: string,
  exporter: InMemorySpanExporter,
  env?: Record<string, string>,
): Promise<TracedSystem> {
  installTraceContext(kind);
  const telemetry = await setupTelemetry({ serviceName, spanExporter: exporter });
  const system = await InProcessSystem.start({ telemetry, logSink: () => {}, ...(env === undefined ? {} : { env }) });
  const nc = await connect({ servers: serviceUrls().nats });
  const subjects = makeSubjects(system.env.NATS_PREFIX ?? '');
  return {
    telemetry,
    system,
    nc,
    subjects,
    proxy: new ProxyClient(nc, subjects),
    api: new ApiClient(system.apiUrl),
    stop: async () => {
      await nc.drain();
      await system.stop();
      await telemetry.shutdown();
      installTraceContext('async');
    },
  };
}
