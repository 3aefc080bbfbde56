import { context, propagation } from '@opentelemetry/api';

/**
 * The active trace context as a plain W3C carrier (`traceparent`, and `tracestate` when set):
 * what a modern MCP request carries in its `_meta`. Empty when no span is active.
 */
export function traceCarrier(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}
