import type { Msg } from '@nats-io/transport-node';
import { encodePayload } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { toWire } from './wire-errors.js';

/** How a request service answers: its instance (named in every reply), its log, and what it serves. */
export interface Answering {
  instance: string;
  log: Logger;
  /** Named in the log line of a reply that could not be sent ("relay", "watch"). */
  what: string;
  /** Counts a request that did not decode (its method or op is unknown then). */
  refused: () => void;
}

/**
 * A request of the endpoint's services over NATS (`mcp.proxy.relay`, `mcp.proxy.watch`): decoded
 * by its strict decoder, with the reply that answers it (a reply that cannot be sent is logged,
 * never thrown into the connection). One that does not decode is answered at once with the typed
 * `invalid_input` naming its field, counted, and undefined is returned.
 */
export function takeRequest<T>(
  msg: Msg,
  decode: (data: Uint8Array) => T,
  how: Answering,
): { req: T; reply: (body: unknown) => void } | undefined {
  const reply = (body: unknown): void => {
    try {
      msg.respond(encodePayload(body));
    } catch (e) {
      how.log.warn(`${how.what} reply failed`, { err: e as Error });
    }
  };
  try {
    return { req: decode(msg.data), reply };
  } catch (e) {
    how.refused();
    reply({ ok: false, instance: how.instance, error: toWire(e).toJSON() });
    return undefined;
  }
}
