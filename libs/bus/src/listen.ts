import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { guardCallback } from '@mcpx/contracts';
import { warnOf, type BusLog } from './log.js';

export interface ListenOptions {
  /** What the messages are, for the log lines (`dropped a malformed <what>`, `<what> handler failed`). */
  what: string;
  log: BusLog;
  /** A queue group: one member receives each message (absent: every subscriber does). */
  queue?: string;
}

/**
 * A core-NATS subscription whose every message is decoded by `decode` before `handle` sees it: one
 * that does not decode is logged (its subject, size and the rule or field it broke, never its
 * bytes) and dropped, and nothing `handle` throws reaches nats.js, which would close the whole
 * connection. `handle` may answer a request itself (`msg.respond`).
 */
export function listen<T>(
  nc: NatsConnection,
  subject: string,
  decode: (msg: Msg) => T,
  handle: (value: T, msg: Msg) => void,
  opts: ListenOptions,
): Subscription {
  const log = { warn: warnOf(opts.log), error: (m: string, f?: Record<string, unknown>) => opts.log.error(m, f) };
  const callback = guardCallback(log, opts.what, (msg) => handle(decode(msg), msg));
  return nc.subscribe(subject, opts.queue === undefined ? { callback } : { queue: opts.queue, callback });
}

/** A `listen` decoder that reads the payload with a payload decoder of `@mcpx/contracts`. */
export function payload<T>(decode: (bytes: Uint8Array) => T): (msg: Msg) => T {
  return (msg) => decode(msg.data);
}

/** A `listen` decoder that reads only the subject, never the payload (an invalidation: any message there counts). */
export function subjectOnly<T>(parse: (subject: string) => T): (msg: Msg) => T {
  return (msg) => parse(msg.subject);
}
