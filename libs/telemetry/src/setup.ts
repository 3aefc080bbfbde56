import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { metrics, trace } from '@opentelemetry/api';
import type { Meter, Tracer, TracerProvider as ApiTracerProvider } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { safeUrlForTelemetry } from './safe-url.js';
import { ensureTraceContext } from './trace-context.js';
import { PropagatingTracerProvider } from './propagating-tracer.js';

export interface TelemetryOptions {
  /** `service.name` resource attribute and the tracer/meter name. */
  serviceName: string;
  /** `service.instance.id`; defaults to `<hostname>-<pid>`. */
  serviceInstanceId?: string;
  serviceVersion?: string;
  /**
   * OTLP/HTTP collector base URL (the `OTEL_EXPORTER_OTLP_ENDPOINT` convention, e.g.
   * `http://otel-collector:4318`); traces go to `<endpoint>/v1/traces`. Unset: no OTLP export.
   */
  otlpEndpoint?: string;
  /**
   * Port of a separate Prometheus `/metrics` HTTP server. `0` picks a free port (see
   * `metricsUrl`); `null` or unset starts no server (use `metricsHandler` on your own server).
   */
  metricsPort?: number | null;
  /** Interface the metrics server binds; default `127.0.0.1` (metrics are for operators, not the network). */
  metricsHost?: string;
  /** Extra exporter, wrapped in a SimpleSpanProcessor (tests pass an InMemorySpanExporter). */
  spanExporter?: SpanExporter;
}

/** `(req, res)` handler writing the Prometheus text exposition of this process's metrics. */
export type MetricsHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface Telemetry {
  tracer: Tracer;
  meter: Meter;
  /** `http://host:port/metrics` when a metrics server was started. */
  metricsUrl?: string;
  /** Serves `/metrics` from a service's own HTTP server (mount it on GET /metrics). */
  metricsHandler: MetricsHandler;
  /** Exports every ended span now (batch processors otherwise wait up to 5 s). */
  forceFlush(): Promise<void>;
  /** Flushes and stops exporters and the metrics server. Safe to call more than once. */
  shutdown(): Promise<void>;
}

/**
 * The global providers are replaced by the latest setup (tests call setup more than once per
 * process); the API refuses a second registration, so the previous one is disabled first.
 * Services should use the returned tracer/meter; the globals exist for third-party code.
 */
function registerGlobalProviders(tracerProvider: ApiTracerProvider, meterProvider: MeterProvider): void {
  trace.disable();
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.disable();
  metrics.setGlobalMeterProvider(meterProvider);
}

function otlpTracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

async function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}

async function close(server: Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * Sets up tracing and metrics for one service process: a TracerProvider (OTLP/HTTP export when
 * `otlpEndpoint` is set, plus `spanExporter`; with neither, spans that only carry their context:
 * ./propagating-tracer.ts), a MeterProvider read by a Prometheus exporter, and
 * the process's trace context (`async` unless its entry point chose `explicit`: ./trace-context.ts)
 * with the W3C trace-context propagator.
 */
export async function setupTelemetry(opts: TelemetryOptions): Promise<Telemetry> {
  ensureTraceContext();

  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: opts.serviceName,
    [ATTR_SERVICE_INSTANCE_ID]: opts.serviceInstanceId ?? `${hostname()}-${process.pid}`,
    ...(opts.serviceVersion === undefined ? {} : { [ATTR_SERVICE_VERSION]: opts.serviceVersion }),
  });

  const spanProcessors: SpanProcessor[] = [];
  if (opts.spanExporter) spanProcessors.push(new SimpleSpanProcessor({ exporter: opts.spanExporter }));
  if (opts.otlpEndpoint) {
    const exporter = new OTLPTraceExporter({ url: otlpTracesUrl(opts.otlpEndpoint) });
    spanProcessors.push(new BatchSpanProcessor({ exporter }));
  }
  const tracerProvider = new TracerProvider({ resource, spanProcessors });
  // With no exporter the SDK's spans would be recorded only to be dropped: they carry their context alone.
  const tracing: ApiTracerProvider = spanProcessors.length > 0 ? tracerProvider : new PropagatingTracerProvider();

  // The exporter's own server treats port 0 as "default 9464" and cannot report the port it
  // bound, so it never starts one; we serve its handler from our own server instead.
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ resource, readers: [prometheus] });
  const metricsHandler: MetricsHandler = (req, res) => prometheus.getMetricsRequestHandler(req, res);

  registerGlobalProviders(tracing, meterProvider);

  let server: Server | undefined;
  let metricsUrl: string | undefined;
  if (opts.metricsPort !== undefined && opts.metricsPort !== null) {
    const candidate = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (req.method === 'GET' && path === '/metrics') {
        metricsHandler(req, res);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    const host = opts.metricsHost ?? '127.0.0.1';
    try {
      const address = await listen(candidate, opts.metricsPort, host);
      server = candidate;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      metricsUrl = safeUrlForTelemetry(
        `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${address.port}/metrics`,
      );
    } catch (err) {
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
      throw new Error(`telemetry: cannot serve /metrics on ${host}:${opts.metricsPort}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  let shutdownPromise: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      const results = await Promise.allSettled([
        tracerProvider.shutdown(),
        meterProvider.shutdown(),
        server ? close(server) : Promise.resolve(),
      ]);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    })();
    return shutdownPromise;
  };

  return {
    tracer: tracing.getTracer(opts.serviceName),
    meter: meterProvider.getMeter(opts.serviceName),
    ...(metricsUrl === undefined ? {} : { metricsUrl }),
    metricsHandler,
    forceFlush: () => tracerProvider.forceFlush(),
    shutdown,
  };
}

/**
 * A service process's telemetry: the one it was given (tests pass theirs), else one set up for
 * `serviceName` and its instance, exporting to `otlpEndpoint` when there is one.
 */
export async function serviceTelemetry(
  given: Telemetry | undefined,
  serviceName: string,
  serviceInstanceId: string,
  otlpEndpoint: string | undefined,
): Promise<Telemetry> {
  if (given !== undefined) return given;
  return await setupTelemetry({ serviceName, serviceInstanceId, ...(otlpEndpoint ? { otlpEndpoint } : {}) });
}
