import { headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  ErrorCodes,
  WireError,
  decodeReply,
  encodePayload,
  malformedMessageFields,
  toWireError,
  type Reply,
} from '@mcpx/contracts';
import { extractTraceContext, injectTraceHeaders } from '@mcpx/telemetry';
import { context, type Context } from '@opentelemetry/api';
import { warnOf, type BusLog } from './log.js';

/**
 * The one request/reply of the services, on the one reply envelope (`Reply<T>` of
 * `@mcpx/contracts`): CBOR both ways, the trace context in the request's headers, a request
 * decoded by the endpoint's decoder before its handler runs, a reply's value by the caller's.
 */

/** A reply value's decoder: checks `value` and returns it typed, or throws naming `field`. */
export type ValueDecoder<T> = (value: unknown, field: string) => T;

/** Headers carrying the active trace context. */
export function traceHeaders(): MsgHdrs {
  return injectTraceHeaders(headers());
}

/**
 * Decodes a reply: the envelope, then (`ok`) its value by `decodeValue`, or (not `ok`) the typed
 * error it carries, thrown. A reply that breaks either is the responder's fault, not the
 * caller's: `internal`, naming `reply` or the value's field (`reply.value.<field>`), with the
 * strict rule it broke, if any.
 */
export function readReply<T>(subject: string, data: Uint8Array, decodeValue: ValueDecoder<T>): T {
  let reply: ReturnType<typeof decodeReply>;
  try {
    reply = decodeReply(data);
  } catch (e) {
    const w = e instanceof WireError ? e : undefined;
    throw new WireError(ErrorCodes.internal, `malformed reply on ${subject}`, {
      field: 'reply',
      ...(w?.details.rule !== undefined ? { rule: w.details.rule } : {}),
    });
  }
  if (!reply.ok) throw WireError.from(reply.error);
  try {
    return decodeValue(reply.value, 'value');
  } catch (e) {
    const field = e instanceof WireError && typeof e.details.field === 'string' ? e.details.field : 'value';
    throw new WireError(ErrorCodes.internal, `malformed reply on ${subject} (${field})`, { field: `reply.${field}` });
  }
}

/**
 * Sends a request and returns its value, decoded by `decodeValue`, or throws the typed error the
 * responder sent. NATS failures (timeout, no responders) are thrown as NATS raised them.
 */
export async function request<T>(
  nc: NatsConnection,
  subject: string,
  payload: unknown,
  decodeValue: ValueDecoder<T>,
  timeoutMs = 10_000,
): Promise<T> {
  const msg = await nc.request(subject, encodePayload(payload), { timeout: timeoutMs, headers: traceHeaders() });
  return readReply(subject, msg.data, decodeValue);
}

/** Encodes a reply; one that cannot be encoded is answered `internal` instead (and logged). */
function encodeReply<Res>(reply: Reply<Res>, msg: Msg, queue: string, log: BusLog): Uint8Array {
  try {
    return encodePayload(reply);
  } catch (e) {
    log.error('reply could not be encoded', { subject: msg.subject, queue, err: e });
    return encodePayload({ ok: false, error: toWireError(e).toJSON() } satisfies Reply<Res>);
  }
}

/** An endpoint: its request's decoder and its handler. */
export interface Endpoint<Req, Res> {
  /** Strict decoding and the request's shape; a refusal (`invalid_input`) is the answer, the handler does not run. */
  decode: (bytes: Uint8Array) => Req;
  handle: (req: Req, msg: Msg, ctx: Context) => Promise<Res>;
}

/**
 * Answers one request. A handler's `WireError` is its answer; anything else it throws is a fault
 * of this service: the caller gets `internal` and `log` gets the error with the subject (never
 * the payload, which may carry a caller's secrets).
 */
async function answer<Req, Res>(
  msg: Msg,
  queue: string,
  endpoint: Endpoint<Req, Res>,
  ctx: Context,
  log: BusLog,
): Promise<void> {
  let reply: Reply<Res>;
  try {
    let req: Req;
    try {
      req = endpoint.decode(msg.data);
    } catch (e) {
      warnOf(log)('refused a malformed request', { ...malformedMessageFields(msg, e), queue });
      throw e;
    }
    reply = { ok: true, value: await endpoint.handle(req, msg, ctx) };
  } catch (e) {
    if (!(e instanceof WireError)) log.error('request handler failed', { subject: msg.subject, queue, err: e });
    reply = { ok: false, error: toWireError(e).toJSON() };
  }
  msg.respond(encodeReply(reply, msg, queue, log));
}

/**
 * Answers requests on `subject` in a queue group with the handler's value or typed error, in the
 * trace context the request carried. Nothing thrown reaches nats.js (which would close the
 * connection): a subscription error, a handler's fault and a reply that cannot be sent are logged.
 */
export function serve<Req, Res>(
  nc: NatsConnection,
  subject: string,
  queue: string,
  endpoint: Endpoint<Req, Res>,
  log: BusLog,
): Subscription {
  return nc.subscribe(subject, {
    queue,
    callback: (err, msg) => {
      if (err) {
        // The client closes the subscription after this (a permissions violation, say).
        log.error('subscription failed', { subject, queue, err });
        return;
      }
      // Nothing may throw out of a callback: not even reading a request's trace headers.
      try {
        const ctx = extractTraceContext(msg.headers);
        context
          .with(ctx, () => answer(msg, queue, endpoint, ctx, log))
          .catch((e: unknown) => {
            // Responding failed (the connection closed, say): the caller times out; say why here.
            log.error('request could not be answered', { subject: msg.subject, queue, err: e });
          });
      } catch (e) {
        log.error('request could not be answered', { subject: msg.subject, queue, err: e });
      }
    },
  });
}
