import type { Msg } from '@nats-io/transport-node';
import { ErrorCodes, WireError } from './errors.js';

/** Where a guarded callback reports: a service's `@mcpx/log` logger fits. */
export interface CallbackLog {
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * What a malformed message is logged with: its subject, size and the rule or field it broke,
 * never its bytes (a payload may carry a caller's arguments or secrets).
 */
export function malformedMessageFields(msg: Pick<Msg, 'subject' | 'data'>, err: unknown): Record<string, unknown> {
  const w = err instanceof WireError ? err : undefined;
  return {
    subject: msg.subject,
    bytes: msg.data.byteLength,
    ...(w ? { field: w.details.field, rule: w.details.rule, reason: w.message } : {}),
  };
}

/**
 * Wraps a core-NATS subscription callback so that nothing it throws reaches the client: nats.js
 * closes the whole connection ("reader closed") when a callback throws, so one malformed message
 * would stop every subscription of the service until it reconnects. An `invalid_input` (a payload
 * decoder's refusal) is logged as a dropped message, anything else as a fault of the handler;
 * neither with the payload. A subscription error (a permissions violation, say) is logged too.
 * `handle` answers a request itself when the message has a reply subject (see `respondInvalid`).
 */
export function guardCallback(
  log: CallbackLog,
  what: string,
  handle: (msg: Msg) => void,
): (err: Error | null, msg: Msg) => void {
  return (err, msg) => {
    if (err) {
      log.error(`${what} subscription failed`, { err });
      return;
    }
    try {
      handle(msg);
    } catch (e) {
      try {
        if (e instanceof WireError && e.code === ErrorCodes.invalidInput)
          log.warn(`dropped a malformed ${what}`, malformedMessageFields(msg, e));
        else log.error(`${what} handler failed`, { subject: msg.subject, err: e });
      } catch {
        // A logger that throws must not close the connection either.
      }
    }
  };
}
