import { Svcm, type ServiceMsg } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import type { BusLog } from './log.js';

/**
 * The one use of `@nats-io/services`: request/reply endpoints registered as a NATS micro-service,
 * so `$SRV.PING|INFO|STATS.<name>` finds every instance with its stats and metadata. The handler
 * is the library's own callback, handed each request as it arrives: nothing is added per request.
 */

export type { ServiceMsg };

export interface MicroServiceEndpoint {
  /** The endpoint's name in `$SRV.INFO` (e.g. `call`). */
  name: string;
  subject: string;
  /** Called from the connection's reader: it must not throw (a throw would close the connection). */
  handler: (err: Error | null, msg: ServiceMsg) => void;
  metadata?: Record<string, string>;
}

export interface MicroServiceOptions {
  name: string;
  version: string;
  description: string;
  metadata?: Record<string, string>;
  /** The queue group of every endpoint. */
  queue: string;
  /** What `$SRV.STATS` adds to the library's per-endpoint counts. */
  stats?: () => unknown;
  endpoints: readonly MicroServiceEndpoint[];
  /** Where a service that stops on an error says so. */
  log: BusLog;
}

export interface MicroService {
  stop(): Promise<void>;
}

/**
 * `@nats-io/services` 3.0.0-25 is typed against nats-core 3.0.0-50 while the connection comes from
 * transport-node 3.4.0 (nats-core 3.4.0). The two differ only in types the services library does
 * not rely on (a `Match` union member); at runtime it just subscribes and responds on the
 * connection it is given, which the proxy's tests exercise (PING/INFO/STATS and the calls).
 */
function asServicesConnection(nc: NatsConnection): ConstructorParameters<typeof Svcm>[0] {
  return nc as unknown as ConstructorParameters<typeof Svcm>[0];
}

/** Starts a micro-service with `opts.endpoints`; `stop()` drains them. */
export async function startMicroService(nc: NatsConnection, opts: MicroServiceOptions): Promise<MicroService> {
  const stats = opts.stats;
  const service = await new Svcm(asServicesConnection(nc)).add({
    name: opts.name,
    version: opts.version,
    description: opts.description,
    ...(opts.metadata !== undefined ? { metadata: opts.metadata } : {}),
    queue: opts.queue,
    // Endpoint stats count synchronous handling only; the service's own figures ride along.
    ...(stats !== undefined ? { statsHandler: () => Promise.resolve(stats()) } : {}),
  });
  for (const e of opts.endpoints)
    service.addEndpoint(e.name, {
      subject: e.subject,
      handler: e.handler,
      ...(e.metadata !== undefined ? { metadata: e.metadata } : {}),
    });
  void service.stopped.then((e) => {
    if (e instanceof Error) opts.log.error('the micro-service stopped', { service: opts.name, err: e });
  });
  return { stop: async () => void (await service.stop()) };
}
