const LF = 0x0a;
const CR = 0x0d;

/**
 * Measures the events of an event stream as its bytes pass, without buffering or decoding them:
 * the size of the event being received (its lines and their line ends; a blank line ends it).
 * Line ends are LF, CR or CRLF, as the SSE grammar has them, also when a CRLF is split between
 * chunks. Linear in the bytes: line ends are found with `indexOf`, each position once.
 */
export class SseEventMeter {
  /** Bytes of the event being received so far. */
  private eventBytes = 0;
  /** Bytes of the line being received so far (0: at the start of a line). */
  private lineBytes = 0;
  /** The last chunk ended with CR: an LF that starts the next one completes that line end. */
  private pendingCr = false;
  /** Events ended so far (blank lines that closed a non-empty event). */
  private ended = 0;

  constructor(
    private readonly maxEventBytes: number,
    private readonly maxEvents = Infinity,
  ) {}

  /** Which bound was passed last: the size of one event, or their number. */
  passed: 'size' | 'count' | undefined;

  /** Counts `chunk`; false as soon as an event (ended or not) holds more than the size bound, or too many events ended. */
  take(chunk: Uint8Array): boolean {
    const ok = this.scan(chunk);
    if (!ok) this.passed = 'size';
    else if (this.ended > this.maxEvents) {
      this.passed = 'count';
      return false;
    }
    return ok;
  }

  private scan(chunk: Uint8Array): boolean {
    const length = chunk.length;
    let pos = 0;
    if (this.pendingCr) {
      this.pendingCr = false;
      if (length > 0 && chunk[0] === LF) {
        pos = 1;
        if (this.eventBytes > 0) this.eventBytes += 1;
        if (this.eventBytes > this.maxEventBytes) return false;
      }
    }
    let nextLf = -2;
    let nextCr = -2;
    while (pos < length) {
      if (nextLf !== -1 && nextLf < pos) nextLf = chunk.indexOf(LF, pos);
      if (nextCr !== -1 && nextCr < pos) nextCr = chunk.indexOf(CR, pos);
      const end = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr);
      if (end === -1) {
        this.lineBytes += length - pos;
        this.eventBytes += length - pos;
        break;
      }
      const blank = this.lineBytes === 0 && end === pos;
      let after = end + 1;
      if (chunk[end] === CR) {
        if (after === length) this.pendingCr = true;
        else if (chunk[after] === LF) after += 1;
      }
      if (blank) {
        // A blank line dispatches the event: the next one starts from nothing.
        if (this.eventBytes > 0) this.ended += 1;
        this.eventBytes = 0;
      } else {
        this.eventBytes += after - pos;
        if (this.eventBytes > this.maxEventBytes) return false;
      }
      this.lineBytes = 0;
      pos = after;
    }
    return this.eventBytes <= this.maxEventBytes;
  }
}
