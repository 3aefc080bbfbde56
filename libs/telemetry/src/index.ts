export { startHealthServer } from './health-server.js';
export { setupTelemetry } from './setup.js';
export type { MetricsHandler, Telemetry, TelemetryOptions } from './setup.js';
export { extractTraceContext, injectTraceHeaders } from './nats-propagation.js';
export { withSpan } from './with-span.js';
export type { WithSpanOptions } from './with-span.js';
export { safeUrlForTelemetry } from './safe-url.js';
export { SpanKind, SpanStatusCode } from '@opentelemetry/api';
export type { Attributes, Context, Counter, Histogram, Meter, Span, Tracer } from '@opentelemetry/api';
