import type { ByteMeter } from './byte-meter.js';
import type { OutboundError } from './errors.js';

/** Stops every body of a budgeted fetch at once (its deadline), with the error naming why. */
export interface BodyStop {
  signal: AbortSignal;
  error(): OutboundError;
}

export interface BodyCut {
  meter: ByteMeter;
  /** Bytes that end the stream in place of the error (an event stream's stand-in answers), or none. */
  tail?: (err: OutboundError) => Uint8Array | undefined;
  /** Told of every cut (for metrics and logs): the error, before the consumer sees it. */
  onCut?: (err: OutboundError) => void;
  stop?: BodyStop;
}

const ignore = (): void => {};

/**
 * `source` counted as it is read: the moment a bound is passed the upstream is cancelled (the
 * chunk that passed it is not handed on) and the stream errors with the bound's error, or ends
 * with `tail`. No read-ahead (high-water mark 0): nothing is pulled from the server, and so
 * nothing is inflated, before the consumer asks for it.
 */
export function boundedWebBody(source: ReadableStream<Uint8Array>, cut: BodyCut): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let over = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const onStop = (): void => {
    if (cut.stop !== undefined) finish(cut.stop.error());
  };
  const settle = (): void => {
    over = true;
    cut.stop?.signal.removeEventListener('abort', onStop);
  };
  const finish = (err: OutboundError): void => {
    if (over) return;
    settle();
    reader.cancel(err).catch(ignore);
    cut.onCut?.(err);
    endWith(controller, err, cut.tail);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        if (cut.stop?.signal.aborted === true) onStop();
        else cut.stop?.signal.addEventListener('abort', onStop, { once: true });
      },
      async pull(c) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (!over) {
            settle();
            c.error(err);
          }
          return;
        }
        if (over) return;
        if (chunk.done) {
          settle();
          c.close();
          return;
        }
        const err = cut.meter.take(chunk.value);
        if (err !== undefined) finish(err);
        else c.enqueue(chunk.value);
      },
      cancel(reason) {
        settle();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** A body refused before any of it was read: the stream at once errors (or ends with `tail`). */
export function refusedWebBody(
  err: OutboundError,
  tail?: (err: OutboundError) => Uint8Array | undefined,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({ start: (c) => endWith(c, err, tail) });
}

function endWith(
  c: ReadableStreamDefaultController<Uint8Array>,
  err: OutboundError,
  tail?: (err: OutboundError) => Uint8Array | undefined,
): void {
  const bytes = tail?.(err);
  try {
    if (bytes === undefined) {
      c.error(err);
    } else {
      c.enqueue(bytes);
      c.close();
    }
  } catch {
    // Already closed by the consumer's cancel.
  }
}
