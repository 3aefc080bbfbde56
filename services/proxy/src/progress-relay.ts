import type { Counter, Meter, Span } from '@opentelemetry/api';
import { PROGRESS_MESSAGE_MAX_CHARS, type CallProgress, type ProxyCallRequest, type Subjects } from '@mcpx/contracts';

/**
 * At most this many progress events per call and second reach the bus (docs/call.md#progress):
 * a server that floods its notifications costs the bus this, the latest of each interval kept.
 */
export const PROGRESS_EVENTS_PER_SECOND = 10;
/**
 * Events that may go at once before the rate applies (a token bucket of this size, refilled at
 * {@link PROGRESS_EVENTS_PER_SECOND}): a server's few quick steps (0, 50, 100 within milliseconds)
 * reach the caller whole; a flood is held to the rate.
 */
export const PROGRESS_BURST = 3;

/** A call's progress as the upstream request reports it (`Progress` of the MCP client). */
export interface UpstreamProgress {
  progress: unknown;
  total?: unknown;
  message?: unknown;
}

/** One call's relay: `progress` is the upstream request's `onProgress`; `close` ends it when the call does. */
export interface CallProgressSink {
  readonly progress: (p: UpstreamProgress) => void;
  readonly close: () => void;
}

/**
 * Relays the progress notifications of calls sent with `progress: true` (the proxy asked the server
 * with a progress token of its own) to `mcp.calls.progress.<acct>.<run>.<callId>`, where the caller
 * listens. Bounded per call: at most {@link PROGRESS_EVENTS_PER_SECOND} a second after a burst of
 * {@link PROGRESS_BURST}, an event that arrives sooner waits for its turn and is replaced by a later one (counted dropped); the last one
 * waiting goes out when the call ends, before its reply. A value that is not a finite number is
 * dropped; a message is cut to {@link PROGRESS_MESSAGE_MAX_CHARS}. Counted by outcome
 * (`mcpx_proxy_progress_events_total`), and the call's span says how many went and were dropped.
 */
export class ProgressRelay {
  private readonly events: Counter;
  private readonly intervalMs: number;

  constructor(
    private readonly publish: (subject: string, value: CallProgress) => void,
    private readonly subjects: Subjects,
    meter: Meter,
    perSecond = PROGRESS_EVENTS_PER_SECOND,
  ) {
    this.events = meter.createCounter('mcpx_proxy_progress_events_total', {
      description: 'Progress notifications of calls, by outcome (relayed, dropped by the per-call bound, invalid)',
    });
    this.intervalMs = 1000 / perSecond;
  }

  open(req: Pick<ProxyCallRequest, 'account' | 'run' | 'callId'>, span: Span): CallProgressSink {
    const subject = this.subjects.callProgress(req.account, req.run, req.callId);
    const counts = { relayed: 0, dropped: 0, invalid: 0 };
    // The bucket: `tokens` at the time `at`, refilled one per interval up to the burst.
    let tokens = PROGRESS_BURST;
    let at = performance.now();
    let waiting: CallProgress | undefined;
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const refill = (): void => {
      const now = performance.now();
      tokens = Math.min(PROGRESS_BURST, tokens + (now - at) / this.intervalMs);
      at = now;
    };
    const send = (value: CallProgress): void => {
      refill();
      tokens = Math.max(0, tokens - 1);
      try {
        this.publish(subject, value);
      } catch {
        // A closed connection: the call goes on without its progress.
        return;
      }
      counts.relayed++;
      this.events.add(1, { outcome: 'relayed' });
    };
    const flush = (): void => {
      timer = undefined;
      const value = waiting;
      waiting = undefined;
      if (value !== undefined) send(value);
    };
    return {
      progress: (p) => {
        if (closed) return;
        const value = progressValue(p);
        if (value === undefined) {
          counts.invalid++;
          this.events.add(1, { outcome: 'invalid' });
          return;
        }
        refill();
        const wait = (1 - tokens) * this.intervalMs;
        if (tokens >= 1 && timer === undefined) return send(value);
        if (waiting !== undefined) {
          if (counts.dropped === 0)
            span.addEvent('progress bounded: events dropped', { 'mcpx.progress.per_second': 1000 / this.intervalMs });
          counts.dropped++;
          this.events.add(1, { outcome: 'dropped' });
        }
        waiting = value;
        timer ??= setTimeout(flush, Math.max(0, wait));
      },
      close: () => {
        if (closed) return;
        closed = true;
        clearTimeout(timer);
        flush();
        if (counts.relayed + counts.dropped + counts.invalid > 0) {
          span.setAttributes({
            'mcpx.progress.relayed': counts.relayed,
            'mcpx.progress.dropped': counts.dropped,
            'mcpx.progress.invalid': counts.invalid,
          });
        }
      },
    };
  }
}

/** The event as published: finite numbers only, the message cut to its bound; undefined when `progress` is not a number. */
function progressValue(p: UpstreamProgress): CallProgress | undefined {
  if (typeof p.progress !== 'number' || !Number.isFinite(p.progress)) return undefined;
  const value: CallProgress = { progress: p.progress };
  if (typeof p.total === 'number' && Number.isFinite(p.total)) value.total = p.total;
  if (typeof p.message === 'string')
    value.message =
      p.message.length > PROGRESS_MESSAGE_MAX_CHARS ? p.message.slice(0, PROGRESS_MESSAGE_MAX_CHARS) : p.message;
  return value;
}
