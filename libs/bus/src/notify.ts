import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { encodePayload, type Reply } from '@mcpx/contracts';
import { traceHeaders as spanHeaders } from '@mcpx/telemetry';

/**
 * Publishes a core-NATS notification (no stream, no acknowledgement; `listen` is the other side):
 * `payload` encoded by the wire encoder (`encodePayload`, which writes only what the strict
 * decoders admit), with the active trace context in its headers when there is one (none: no
 * header block). A payload that cannot be encoded, or a closed connection, throws here, at the
 * caller: a notification is never dropped silently.
 */
export function notify<T>(nc: NatsConnection, subject: string, payload: T): void {
  const headers = spanHeaders();
  nc.publish(subject, encodePayload(payload), headers === undefined ? undefined : { headers });
}

/**
 * Answers a request taken by `listen` (or any hand-made subscription) with `value`, in the one
 * reply envelope (`{ok: true, value}`, read by `request`/`readReply`). `serve` answers its own
 * requests; this is for a responder that answers only some of them (silence meaning "not here").
 */
export function respond<T>(msg: Msg, value: T): boolean {
  return msg.respond(encodePayload({ ok: true, value } satisfies Reply<T>));
}
