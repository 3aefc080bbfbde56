import { OutboundError, ResponseBound } from './errors.js';
import { SseEventMeter } from './sse-event-meter.js';

/** Bytes left of a budget shared by several responses (one discovery's, see `budgetedFetch`). */
export class ByteBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Bytes read so far against this budget. */
  get spent(): number {
    return this.used;
  }

  /** Charges `bytes`; false once the total is above the limit. */
  charge(bytes: number): boolean {
    this.used += bytes;
    return this.used <= this.limit;
  }

  /** Whether `bytes` more would still fit. */
  fits(bytes: number): boolean {
    return this.used + bytes <= this.limit;
  }
}

/** What one response is counted against. */
export interface MeterLimits {
  /** The bound of the whole body and its name (`maxBodyBytes`, `maxSseStreamBytes` or `maxTotalBytes`). */
  body?: { name: typeof ResponseBound.body | typeof ResponseBound.sseStream; limit: number };
  /** For an event stream: the bound of one event. */
  sseEvent?: number;
  /** For an event stream: how many events it may carry. */
  sseEvents?: number;
  /** A budget shared with other responses. */
  budget?: ByteBudget;
}

/**
 * Counts the bytes of one response body as they are read (after decompression) against its
 * bounds, and names the first one passed. Nothing is buffered.
 */
export class ByteMeter {
  private bytes = 0;
  private readonly events: SseEventMeter | undefined;

  constructor(
    private readonly limits: MeterLimits,
    /**
     * The request's URL, for the error (only its origin is kept); as a string (an origin), it is
     * parsed only when a bound is passed, not for every response.
     */
    private readonly where: URL | string,
  ) {
    this.events = limits.sseEvent === undefined ? undefined : new SseEventMeter(limits.sseEvent, limits.sseEvents);
  }

  private get url(): URL {
    return typeof this.where === 'string' ? new URL(this.where) : this.where;
  }

  /** Counts `chunk`; the error of the bound it passes, or undefined while all hold. */
  take(chunk: Uint8Array): OutboundError | undefined {
    const { body, budget } = this.limits;
    this.bytes += chunk.length;
    if (body !== undefined && this.bytes > body.limit) return OutboundError.tooLarge(body.name, body.limit, this.url);
    if (this.events !== undefined && !this.events.take(chunk)) {
      return this.events.passed === 'count'
        ? OutboundError.tooLarge(ResponseBound.sseEvents, this.limits.sseEvents ?? 0, this.url)
        : OutboundError.tooLarge(ResponseBound.sseEvent, this.limits.sseEvent ?? 0, this.url);
    }
    if (budget !== undefined && !budget.charge(chunk.length))
      return OutboundError.tooLarge(ResponseBound.total, budget.limit, this.url);
    return undefined;
  }

  /** The error for a declared Content-Length no bound admits, or undefined. */
  refuseDeclared(declared: number): OutboundError | undefined {
    const { body, budget } = this.limits;
    if (body !== undefined && declared > body.limit)
      return OutboundError.tooLarge(body.name, body.limit, this.url, declared);
    if (budget !== undefined && !budget.fits(declared))
      return OutboundError.tooLarge(ResponseBound.total, budget.limit, this.url, declared);
    return undefined;
  }
}
