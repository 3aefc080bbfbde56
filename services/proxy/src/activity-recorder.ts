import {
  ROOT_CONTEXT,
  SpanStatusCode,
  type Counter,
  type Histogram,
  type Meter,
  type Tracer,
} from '@opentelemetry/api';
import type { ProxyCallRequest } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { CallColumns, type ActivityStore } from './activity-store.js';
import { outcomeOf, type CallTarget } from './call-metrics.js';

export interface ActivityRecorderOptions {
  store: ActivityStore;
  meter: Meter;
  tracer?: Tracer;
  log?: Logger;
  /** Calls held before they are written; past it a call is not recorded, and counted. */
  buffer: number;
  /** How often what is held is written. */
  flushMs: number;
  /** Rows per INSERT (default 2,000). */
  batch?: number;
  /** Retention: by age, and per account by count (absent: the log is not trimmed by this recorder). */
  retention?: { days: number; maxCallsPerAccount: number; everyMs?: number };
}

/** Why a call was not recorded: the buffer was full, or its batch was given up after failed writes. */
export type DropReason = 'buffer_full' | 'write_failed';

/** A failed write is retried after this long at most (doubling from the flush interval). */
const MAX_BACKOFF_MS = 30_000;
/** Accounts remembered for the per-account cap between two prunes (the oldest are forgotten first). */
const MAX_PRUNE_ACCOUNTS = 10_000;

/**
 * The call log's writer in the proxy (docs/activity.md). {@link record} is the call path's one
 * hook: it builds a row and pushes it on a bounded in-memory buffer, with no I/O, no await and no
 * way to fail the call. A timer writes what is held in batches, off the call path: armed by the
 * first call held (written at most `flushMs` later, as under load), never while nothing is held,
 * so an idle proxy is not woken up for the log.
 *
 * When the buffer is full, a new call is not recorded (`mcpx_activity_dropped_total{reason=
 * "buffer_full"}`): the calls never wait for the log. When Postgres does not answer, the batch
 * stays held and the write is retried with a doubling delay (at most 30 s); while it is down the
 * buffer fills and new calls are dropped, counted, never blocked. Names, codes, ids and a duration
 * only: never an argument, a result or a secret.
 */
export class ActivityRecorder {
  private rows = new CallColumns();
  private timer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private failures = 0;
  private started = false;
  private stopped = false;
  private readonly batch: number;
  private readonly recorded: Counter;
  private readonly dropped: Counter;
  private readonly writeFailures: Counter;
  private readonly writeTime: Histogram;
  private readonly accounts = new Set<string>();
  private readonly counts = { recorded: 0, dropped: 0, writeFailures: 0 };

  constructor(private readonly opts: ActivityRecorderOptions) {
    this.batch = opts.batch ?? 2_000;
    const { meter } = opts;
    this.recorded = meter.createCounter('mcpx_activity_recorded_total', {
      description: 'Calls written to the call log',
    });
    this.dropped = meter.createCounter('mcpx_activity_dropped_total', {
      description: 'Calls not written to the call log, by reason (buffer_full, write_failed)',
    });
    this.writeFailures = meter.createCounter('mcpx_activity_write_failures_total', {
      description: 'Failed writes of a batch of calls (retried)',
    });
    this.writeTime = meter.createHistogram('mcpx_activity_write_ms', {
      unit: 'ms',
      description: 'Time to write one batch of calls',
    });
    meter
      .createObservableGauge('mcpx_activity_held', {
        description: 'Calls held by the proxy, not yet written to the call log',
      })
      .addCallback((o) => o.observe(this.rows.length));
  }

  /** Calls written, dropped, and failed writes, since the start (for tests and stats). */
  get stats(): { recorded: number; dropped: number; writeFailures: number; held: number } {
    return { ...this.counts, held: this.rows.length };
  }

  /**
   * The call path's hook: one call's metadata, held for the next write. `target` holds what the
   * proxy learnt of the call (its server and remote tool from the registry's document, the era).
   */
  record(req: ProxyCallRequest, target: CallTarget, code: string, ms: number): void {
    if (this.rows.length >= this.opts.buffer || this.stopped) {
      this.counts.dropped++;
      this.dropped.add(1, { reason: 'buffer_full' satisfies DropReason });
      return;
    }
    // A task's id, once calls carry one (read loosely so the log needs no change when they do).
    const taskId = (req as { taskId?: unknown }).taskId;
    const c = this.rows;
    // A duration that is not a number would make the batch's INSERT fail, again and again.
    const took = Number.isFinite(ms) && ms >= 0 ? ms : 0;
    c.account.push(req.account);
    // Whole milliseconds: the cursor of ListCalls is a time in ms and must name a row exactly.
    c.at.push(Math.round(Date.now() - took));
    c.agent.push(req.agent);
    c.run.push(req.run);
    c.callId.push(req.callId);
    c.server.push(target.server);
    c.tool.push(req.tool);
    c.code.push(code);
    c.outcome.push(outcomeOf(code));
    c.durationMs.push(Math.round(took));
    c.era.push(target.era);
    c.approvalId.push(req.approvalId);
    c.inputRequestId.push(req.inputRequestId);
    c.taskId.push(typeof taskId === 'string' && taskId.length <= 128 ? taskId : undefined);
    this.arm();
  }

  /** Starts the timers (writes, and retention when set). */
  start(): this {
    this.started = true;
    if (this.rows.length > 0) this.arm();
    const r = this.opts.retention;
    if (r !== undefined) {
      const every = r.everyMs ?? 600_000;
      const run = (): void => {
        this.pruneTimer = setTimeout(run, every * (0.75 + Math.random() / 2));
        this.pruneTimer.unref();
        void this.prune();
      };
      this.pruneTimer = setTimeout(run, Math.min(every, 30_000 + Math.random() * 30_000));
      this.pruneTimer.unref();
    }
    return this;
  }

  /** Writes everything held now (one batch after another); a failure leaves the rest held. */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    while (this.rows.length > 0) {
      const before = this.rows.length;
      await this.writeOnce();
      if (this.rows.length >= before) return;
    }
  }

  /** Trims the log: by age, then each account written since the last trim by count. */
  async prune(): Promise<number> {
    const r = this.opts.retention;
    if (r === undefined) return 0;
    const accounts = [...this.accounts];
    this.accounts.clear();
    try {
      const n = await this.opts.store.prune(new Date(Date.now() - r.days * 86_400_000), accounts, r.maxCallsPerAccount);
      if (n > 0) this.opts.log?.info('calls past the log retention deleted', { count: n });
      return n;
    } catch (err) {
      for (const a of accounts) this.remember(a);
      this.opts.log?.warn('call log retention failed', { err: err as Error });
      return 0;
    }
  }

  /** Stops the timers and writes what is held, trying once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.pruneTimer);
    await this.flush().catch(() => undefined);
    if (this.rows.length > 0) this.drop(this.rows.length, 'write_failed');
    this.rows = new CallColumns();
  }

  /**
   * Arms the write of what is held: after `flushMs`, or after the backoff of the failed writes in
   * a row. Not before {@link start}, not after {@link stop}, and never twice.
   */
  private arm(): void {
    if (!this.started || this.stopped || this.timer !== undefined) return;
    const delay =
      this.failures === 0 ? this.opts.flushMs : Math.min(this.opts.flushMs * 2 ** this.failures, MAX_BACKOFF_MS);
    this.timer = setTimeout(() => {
      void this.tick();
    }, delay);
    this.timer.unref();
  }

  /** Writes what is held; armed again only when something is still held (a failed batch, or calls that came meanwhile). */
  private async tick(): Promise<void> {
    try {
      await this.flush();
    } finally {
      this.timer = undefined;
      if (this.rows.length > 0) this.arm();
    }
  }

  /** One batch from the front: written, or put back (the buffer keeps its bound). Never throws. */
  private writeOnce(): Promise<void> {
    const batch = this.rows.take(this.batch);
    // A trace of its own: a batch belongs to no one call.
    const span = this.opts.tracer?.startSpan(
      'proxy.activity.write',
      { attributes: { 'mcpx.activity.rows': batch.length } },
      ROOT_CONTEXT,
    );
    const started = performance.now();
    const done = this.opts.store.write(batch).then(
      () => {
        this.failures = 0;
        this.counts.recorded += batch.length;
        this.recorded.add(batch.length);
        for (const account of batch.account) this.remember(account);
        this.writeTime.record(performance.now() - started, { outcome: 'ok' });
        span?.end();
      },
      (err: unknown) => {
        this.failures++;
        this.counts.writeFailures++;
        this.writeFailures.add(1);
        this.writeTime.record(performance.now() - started, { outcome: 'error' });
        span?.setStatus({ code: SpanStatusCode.ERROR, message: 'write failed' });
        span?.end();
        if (this.failures === 1)
          this.opts.log?.warn('call log write failed: calls held and retried', {
            err: err as Error,
            held: batch.length + this.rows.length,
          });
        // Put back in front of the newer ones; what no longer fits is given up and counted.
        const room = Math.max(0, this.opts.buffer - this.rows.length);
        if (room < batch.length) this.drop(batch.length - room, 'write_failed');
        this.rows.prepend(batch, room);
      },
    );
    this.writing = done.finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  private drop(n: number, reason: DropReason): void {
    this.counts.dropped += n;
    this.dropped.add(n, { reason });
  }

  private remember(account: string): void {
    if (this.accounts.has(account)) return;
    if (this.accounts.size >= MAX_PRUNE_ACCOUNTS) this.accounts.delete(this.accounts.values().next().value as string);
    this.accounts.add(account);
  }
}
