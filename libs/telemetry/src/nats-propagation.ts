import { ROOT_CONTEXT, context, propagation, trace } from '@opentelemetry/api';
import type { Context, TextMapGetter, TextMapSetter } from '@opentelemetry/api';
import { Match, headers as natsHeaders } from '@nats-io/transport-node';
import type { MsgHdrs } from '@nats-io/transport-node';

const setter: TextMapSetter<MsgHdrs> = {
  set(carrier, key, value) {
    carrier.set(key, value);
  },
};

// Header names are matched case-insensitively: HTTP gateways and other clients canonicalise
// `traceparent` to `Traceparent`.
const getter: TextMapGetter<MsgHdrs> = {
  keys(carrier) {
    return carrier.keys();
  },
  // One scan of the keys per header asked (`has` then `values` made two, on every message received).
  get(carrier, key) {
    const values = carrier.values(key, Match.IgnoreCase);
    if (values.length === 0) return undefined;
    return values.length === 1 ? values[0] : values;
  },
};

/**
 * Writes the W3C trace context (`traceparent`, `tracestate`) of `ctx` (default: the active
 * context) into NATS message headers; returns the same headers for chaining.
 */
export function injectTraceHeaders(h: MsgHdrs, ctx: Context = context.active()): MsgHdrs {
  propagation.inject(ctx, h, setter);
  return h;
}

/**
 * The W3C trace context of `ctx` (default: the active context) as new NATS message headers, or
 * `undefined` when it carries no span: a request from an untraced caller then goes without headers
 * (the receiver starts a trace of its own, as it would from empty headers) and costs neither side
 * the header block.
 */
export function traceHeaders(ctx: Context = context.active()): MsgHdrs | undefined {
  if (trace.getSpanContext(ctx) === undefined) return undefined;
  return injectTraceHeaders(natsHeaders(), ctx);
}

/**
 * Reads the trace context carried by a message's headers. The result is based on the root
 * context, not the active one, so a message without headers starts a new trace instead of
 * joining whatever happened to be active in the subscription callback.
 */
export function extractTraceContext(h?: MsgHdrs): Context {
  if (!h) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, h, getter);
}
