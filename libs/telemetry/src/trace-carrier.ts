import { context, propagation } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';

/**
 * The trace context `ctx` (default: the active one) as a plain W3C carrier (`traceparent`, and
 * `tracestate` when set): what a modern MCP request carries in its `_meta`, and an HTTP request
 * in its headers. Empty when `ctx` carries no span.
 */
export function traceCarrier(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}
