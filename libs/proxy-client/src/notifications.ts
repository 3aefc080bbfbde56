import type { NatsConnection } from '@nats-io/transport-node';
import { encodePayload, type ProxyCancel, type RunEnded } from '@mcpx/contracts';
import { traceHeaders } from '@mcpx/telemetry';

/** The notifications a runtime publishes: a call's cancel and a run's end. */
export type RuntimeNotification = ProxyCancel | RunEnded;

/**
 * The client's one way to publish a core-NATS notification, the runtime-side twin of
 * `@mcpx/bus`'s `notify`: the payload encoded by the wire encoder (`encodePayload`, which writes
 * only what the strict decoders admit), with the active trace context in its headers when there
 * is one. A payload that cannot be encoded, or a closed connection, throws at the caller.
 *
 * Not `notify` itself: the layering (eslint/layering.js) keeps this client on contracts, domain
 * and telemetry, because runtimes embed it, and `@mcpx/bus` brings JetStream and the services
 * framework with it (its package depends on both, whatever one imports of it).
 */
export function publishNotification(nc: NatsConnection, subject: string, payload: RuntimeNotification): void {
  const headers = traceHeaders();
  nc.publish(subject, encodePayload(payload), headers === undefined ? undefined : { headers });
}
