import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Counter,
  type Meter,
  type Span,
  type Tracer,
  type UpDownCounter,
} from '@opentelemetry/api';
import { LockBusyError, type SingleFlight } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import type { McpConnection } from '@mcpx/mcp-client';
import { McpAttributes } from '@mcpx/telemetry';
import { discoveryErrorCode } from './discovery-telemetry.js';

/** Bounds of the change streams (`subscriptions/listen`) a registry instance holds. */
export const LISTEN_LIMITS = {
  /** Streams held by one instance at most; servers past it keep quiet discovery and re-lists. */
  perInstance: 64,
  /** The Redis lease that makes one instance across all of them hold a server's stream (renewed while held). */
  leaseTtlMs: 30_000,
  /** Re-open after a break: `baseMs · 2^(failures-1)`, capped, ±20 % jitter. */
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  /** At most one re-discovery per server this often, however many notifications arrive (a flood collapses). */
  minRediscoverGapMs: 1_000,
} as const;

/** One server whose stream is wanted: how to open a connection to it, and what a change does. */
export interface ListenTarget {
  /** `<account>:<name>`: one stream per key across every registry instance. */
  key: string;
  /** A fresh connection as discovery makes one (its headers, its verdict), which the stream owns; null when the server is gone (the stream ends). */
  open(signal: AbortSignal): Promise<McpConnection | null>;
  /** Re-discovers the server now (a `notifications/tools/list_changed` arrived). */
  changed(): Promise<void>;
}

export interface ListenStreamsDeps {
  singleFlight: SingleFlight;
  log: Logger;
  meter: Meter;
  /** Spans of each opening (`discovery.listen`) and each break (`discovery.listen.break`); default: the global tracer. */
  tracer?: Tracer;
  random?: () => number;
}

interface Held {
  ctl: AbortController;
  done: Promise<void>;
}

/**
 * The change streams of modern servers that advertise `tools.listChanged`: one per server across
 * all registry instances (a Redis lease; the instance that holds it renews it while the stream
 * lives, a crashed holder frees it within the lease's TTL), bounded per instance, re-opened after
 * a break with backoff. A list_changed re-discovers the server at once, so agents and the console
 * see the new tools with no refresh asked.
 */
export class ListenStreams {
  private readonly held = new Map<string, Held>();
  private stopped = false;
  private readonly events: Counter;
  private readonly open: UpDownCounter;
  private readonly tracer: Tracer;

  constructor(private readonly deps: ListenStreamsDeps) {
    this.events = deps.meter.createCounter('mcpx_registry_listen_events_total', {
      description:
        'Change streams (subscriptions/listen) by event: opened, ended, failed, held_elsewhere, full, changed',
    });
    this.open = deps.meter.createUpDownCounter('mcpx_registry_listen_streams', {
      description: 'Change streams held open by this instance',
    });
    this.tracer = deps.tracer ?? trace.getTracer('registry');
  }

  /** Streams this instance holds (for tests and stats). */
  get size(): number {
    return this.held.size;
  }

  /** Whether this instance holds the stream of `key`. */
  holds(key: string): boolean {
    return this.held.has(key);
  }

  /** Holds the stream of `target` unless this instance has it already, another instance holds it, or this one is full. */
  want(target: ListenTarget): void {
    if (this.stopped || this.held.has(target.key)) return;
    if (this.held.size >= LISTEN_LIMITS.perInstance) {
      this.events.add(1, { event: 'full' });
      return;
    }
    const ctl = new AbortController();
    const entry: Held = { ctl, done: Promise.resolve() };
    this.held.set(target.key, entry);
    entry.done = this.deps.singleFlight
      .exclusive(`listen:${target.key}`, { ttlMs: LISTEN_LIMITS.leaseTtlMs, waitMs: 0 }, () =>
        this.hold(target, ctl.signal),
      )
      .catch((err: unknown) => {
        if (err instanceof LockBusyError) this.events.add(1, { event: 'held_elsewhere' });
        else this.deps.log.warn('change stream stopped', { server: target.key, err: err as Error });
      })
      .finally(() => {
        if (this.held.get(target.key) === entry) this.held.delete(target.key);
      });
  }

  /** Closes the stream of `key`, if held here (the server went, or no longer streams changes). */
  async drop(key: string): Promise<void> {
    const entry = this.held.get(key);
    if (entry === undefined) return;
    entry.ctl.abort();
    await entry.done;
  }

  /** Closes every stream (shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.held.values()];
    for (const h of all) h.ctl.abort();
    await Promise.all(all.map((h) => h.done));
  }

  /**
   * One span per opening (connect with the stored verdict, then subscriptions/listen), ended once
   * the stream is open or the opening failed: a stream lives for hours, its span does not.
   */
  private openingSpan(server: string, reopened: boolean, failures: number): Span {
    return this.tracer.startSpan('discovery.listen', {
      kind: SpanKind.CLIENT,
      attributes: {
        [McpAttributes.methodName]: 'subscriptions/listen',
        [McpAttributes.server]: server,
        'mcpx.listen.reopen': reopened,
        'mcpx.listen.failures': failures,
      },
    });
  }

  /** A stream's break: a span of its own (the stream's opening span has long ended). */
  private traceBreak(server: string, how: unknown): void {
    this.tracer
      .startSpan('discovery.listen.break', {
        attributes: {
          [McpAttributes.methodName]: 'subscriptions/listen',
          [McpAttributes.server]: server,
          'mcpx.listen.how': String(how),
          [McpAttributes.outcome]: 'broken',
        },
      })
      .end();
  }

  /** Keeps the stream open until `signal` aborts or the server no longer offers one; re-opens a broken one with backoff. */
  private async hold(target: ListenTarget, signal: AbortSignal): Promise<void> {
    let failures = 0;
    let reopened = false;
    const rediscover = coalesce(
      () => target.changed(),
      LISTEN_LIMITS.minRediscoverGapMs,
      (err) => this.deps.log.warn('re-discovery after list_changed failed', { server: target.key, err: err as Error }),
    );
    const server = target.key.slice(target.key.indexOf(':') + 1);
    while (!signal.aborted) {
      let conn: McpConnection | undefined;
      let counted = false;
      const opening = this.openingSpan(server, reopened, failures);
      try {
        const opened = await target.open(signal);
        if (opened === null) {
          opening.setAttributes({ [McpAttributes.outcome]: 'gone' });
          return;
        }
        conn = opened;
        if (conn.era !== 'modern' || conn.client.getServerCapabilities()?.tools?.listChanged !== true) {
          opening.setAttributes({ [McpAttributes.outcome]: 'not_offered' });
          return;
        }
        conn.client.setNotificationHandler('notifications/tools/list_changed', () => {
          this.events.add(1, { event: 'changed' });
          rediscover();
        });
        // The SDK's subscription, not McpConnection.listen: only it tells how the stream ended.
        const subscription = await conn.client.listen({ toolsListChanged: true }, { signal });
        this.events.add(1, { event: 'opened' });
        this.open.add(1);
        counted = true;
        opening.setAttributes({ [McpAttributes.outcome]: 'ok' });
        opening.end();
        // A change made while the stream was down is not lost: list once on re-opening (the
        // first opening follows a discovery that just listed).
        if (reopened) rediscover();
        reopened = true;
        failures = 0;
        const how = await subscription.closed;
        if (how === 'local' || signal.aborted) return;
        this.events.add(1, { event: 'ended', how });
        failures++;
        this.traceBreak(server, how);
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        this.events.add(1, { event: 'failed' });
        const code = discoveryErrorCode(err);
        opening.setAttributes({ [McpAttributes.outcome]: 'error', [McpAttributes.errorCode]: code });
        opening.setStatus({ code: SpanStatusCode.ERROR, message: code });
        this.deps.log.warn('change stream failed', { server: target.key, failures, err: err as Error });
      } finally {
        // A stream that was counted open is uncounted however it ended (a throw included).
        if (counted) this.open.add(-1);
        // Ending an ended span is a no-op (the SDK warns only in diagnostics).
        if (!counted) opening.end();
        await conn?.close().catch(() => undefined);
      }
      await sleep(backoffMs(failures, this.deps.random ?? Math.random), signal);
    }
  }
}

/** Re-open delay after `failures` breaks in a row. */
export function backoffMs(failures: number, random: () => number = Math.random): number {
  const exp = Math.min(LISTEN_LIMITS.backoffMaxMs, LISTEN_LIMITS.backoffBaseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exp * (0.8 + 0.4 * random()));
}

/** Runs `fn` now, or once more after the running one (and at least `gapMs` after it started): a flood of calls is a few runs. */
function coalesce(fn: () => Promise<void>, gapMs: number, onError: (err: unknown) => void): () => void {
  let running = false;
  let again = false;
  const run = async (): Promise<void> => {
    running = true;
    try {
      do {
        again = false;
        const started = Date.now();
        await fn().catch(onError);
        const wait = gapMs - (Date.now() - started);
        if (again && wait > 0) await new Promise((r) => setTimeout(r, wait));
      } while (again);
    } finally {
      running = false;
    }
  };
  return () => {
    if (running) again = true;
    else void run();
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
