import { errors } from '@nats-io/transport-node';

/**
 * What a failed NATS request or connect says, told apart once, by nats.js v3's own error classes
 * (never by an error's name or message). The proxy's client, the endpoint and the CLI decide on
 * these kinds only.
 * - `no_responders`: nobody listens on the subject: the request reached no one, nothing ran.
 * - `timeout`: no answer in time: a responder may have received it (and may have run it).
 * - `closed`: the connection is closed or draining: the request was not sent.
 * - `unreachable`: the NATS server could not be reached (the connect failed).
 * - `refused`: the NATS server refused the user (authorization, an expired user) or the subject
 *   (a permission violation): the same request is refused again.
 * - `lost`: the request failed with no cause nats.js names (the connection dropped under it):
 *   it may have reached a responder.
 */
export const NatsFailures = {
  noResponders: 'no_responders',
  timeout: 'timeout',
  closed: 'closed',
  unreachable: 'unreachable',
  refused: 'refused',
  lost: 'lost',
} as const;
export type NatsFailure = (typeof NatsFailures)[keyof typeof NatsFailures];

const MAX_DEPTH = 4;

/**
 * The kind of a NATS failure, or `undefined` when `err` is not one of nats.js' errors (a fault of
 * the caller's own, a decoding error): those are not NATS's to classify. A `RequestError` is
 * classified by its cause (`no responders` arrives as a `RequestError` whose cause is a
 * `NoRespondersError`).
 */
export function natsFailure(err: unknown, depth = 0): NatsFailure | undefined {
  if (depth > MAX_DEPTH) return undefined;
  if (err instanceof errors.RequestError) {
    if (err.isNoResponders()) return NatsFailures.noResponders;
    return err.cause === undefined ? NatsFailures.lost : (natsFailure(err.cause, depth + 1) ?? NatsFailures.lost);
  }
  if (err instanceof errors.NoRespondersError) return NatsFailures.noResponders;
  if (err instanceof errors.TimeoutError) return NatsFailures.timeout;
  if (err instanceof errors.ClosedConnectionError || err instanceof errors.DrainingConnectionError)
    return NatsFailures.closed;
  if (
    err instanceof errors.AuthorizationError ||
    err instanceof errors.UserAuthenticationExpiredError ||
    err instanceof errors.PermissionViolationError
  ) {
    return NatsFailures.refused;
  }
  if (err instanceof errors.ConnectionError) return NatsFailures.unreachable;
  return undefined;
}
