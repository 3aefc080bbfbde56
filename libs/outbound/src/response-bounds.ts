/**
 * How much of a remote server's answer the connector reads (its data is untrusted). Every size
 * is in decompressed bytes: a gzip, deflate or br body is counted as it inflates, so the
 * compression ratio does not matter.
 */
export interface ResponseBounds {
  /** One body that is not an event stream: a JSON-RPC answer, an error page. */
  maxBodyBytes: number;
  /**
   * Everything one event-stream response carries. A POST's stream carries one answer and its
   * progress; a long-lived GET stream that reaches it is ended and the MCP client opens a new one.
   */
  maxSseStreamBytes: number;
  /**
   * One event of an event stream (all its lines; a line without end counts as it grows). An MCP
   * server's usual answer to a POST is one event holding the whole JSON-RPC result, so this is
   * as large as {@link maxBodyBytes} by default: a result may carry images.
   */
  maxSseEventBytes: number;
  /**
   * How many events one event-stream response may carry. Each event costs the MCP client a
   * parse and a validation, many times its size in short-lived memory: a stream of tiny events
   * grows the heap far more than its bytes. A POST's stream carries its answer and some
   * progress; a GET stream that reaches it is ended and opened again by the client.
   */
  maxSseEvents: number;
}

const MiB = 1024 * 1024;

/**
 * The defaults: 8 MiB per body and per event, 16 MiB and 2000 events per event stream (measured:
 * 10,000 small notifications grew an MCP client's peak RSS by about 80 MiB, 2000 by under 10).
 * The domain's own limits on
 * results (256 KiB of text, images within the reply's payload) cut far below these later; these
 * only keep a hostile server from filling the process's memory.
 */
export const DEFAULT_RESPONSE_BOUNDS: Readonly<ResponseBounds> = Object.freeze({
  maxBodyBytes: 8 * MiB,
  maxSseStreamBytes: 16 * MiB,
  maxSseEventBytes: 8 * MiB,
  maxSseEvents: 2000,
});

/** The defaults with `given` over them; a bound that is not a positive integer throws at wiring time. */
export function resolveResponseBounds(given: Partial<ResponseBounds> = {}): ResponseBounds {
  const bounds = { ...DEFAULT_RESPONSE_BOUNDS, ...given };
  for (const [name, value] of Object.entries(bounds))
    assertPositiveBytes(name, value, name === 'maxSseEvents' ? 'events' : 'bytes');
  return bounds;
}

/** Throws a TypeError naming `name` unless `value` is a positive safe integer. */
export function assertPositiveBytes(name: string, value: unknown, unit: 'bytes' | 'events' = 'bytes'): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`outbound bound ${name} must be a positive integer number of ${unit}`);
  }
}
