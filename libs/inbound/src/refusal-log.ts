import type { InboundReason } from './refusals.js';

/** What the guard logs with (a `@mcpx/log` Logger is one). */
export interface WarnLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** One line at most this often, however many refusals a flood makes. */
const EVERY_MS = 10_000;

/**
 * Refusals said in the log without flooding it: the first at once, then the count by reason of
 * those that came in each following window (one line per window, none when there were none).
 */
export class RefusalLog {
  private counts = new Map<InboundReason, number>();
  private window: NodeJS.Timeout | undefined;

  constructor(private readonly log: WarnLogger) {}

  add(reason: InboundReason): void {
    if (this.window === undefined) {
      this.log.warn('inbound requests refused', { refused: { [reason]: 1 }, windowMs: EVERY_MS });
      this.open();
      return;
    }
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
  }

  private open(): void {
    this.window = setTimeout(() => {
      this.window = undefined;
      if (this.counts.size === 0) return;
      this.log.warn('inbound requests refused', { refused: Object.fromEntries(this.counts), windowMs: EVERY_MS });
      this.counts = new Map();
      this.open();
    }, EVERY_MS);
    this.window.unref();
  }
}
