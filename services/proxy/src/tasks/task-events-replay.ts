import type { Counter, Meter } from '@opentelemetry/api';
import type { TaskEvent } from '@mcpx/contracts';
import type { NatsConnection } from '@nats-io/transport-node';

/** How long a task's last event is kept for a replay: longer than a NATS blip the proxy rides out. */
const KEEP_MS = 120_000;
/** Events published this long before the connection was seen down may have been lost with it. */
const SLACK_MS = 2_000;
/** At most this many tasks' last events are kept (the oldest go first). */
const MAX_KEPT = 10_000;

interface Kept {
  at: number;
  subject: string;
  event: TaskEvent;
}

/**
 * nats.js drops what was published while its connection was down (it empties its outbound buffer
 * when it reconnects), so a task's change that this instance published then (the task ended, a
 * question asked) would reach no runtime or endpoint waiting on the task's events: they would hear
 * of it only at their own bound, or never if they did not read again. Each task's last published
 * event is kept for a while; when the connection is back, the events published since shortly
 * before it went down are published again, each task's latest once (a waiter takes the first
 * final event it hears: a second one of the same end changes nothing for it).
 */
export class TaskEventsReplay {
  private readonly kept = new Map<string, Kept>();
  private downSince: number | undefined;
  private readonly replayed: Counter;

  constructor(
    private readonly publish: (subject: string, event: TaskEvent) => void,
    meter: Meter,
    private readonly now: () => number = Date.now,
  ) {
    this.replayed = meter.createCounter('mcpx_proxy_task_events_replayed_total', {
      description: "Task events published again after the proxy's NATS connection came back",
    });
  }

  /** Publishes `event` and keeps it as its task's last. */
  send(subject: string, event: TaskEvent): void {
    const at = this.now();
    this.kept.delete(event.task);
    this.kept.set(event.task, { at, subject, event });
    if (this.kept.size > MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
    this.publish(subject, event);
  }

  /** The connection went down (the first sign of it counts). */
  down(): void {
    this.downSince ??= this.now();
  }

  /** The connection is back: the events that may have been lost are published again; how many. */
  up(): number {
    if (this.downSince === undefined) return 0;
    const since = this.downSince - SLACK_MS;
    this.downSince = undefined;
    const now = this.now();
    let n = 0;
    for (const [task, k] of this.kept) {
      if (now - k.at > KEEP_MS) {
        this.kept.delete(task);
        continue;
      }
      if (k.at < since) continue;
      this.publish(k.subject, k.event);
      n++;
    }
    if (n > 0) this.replayed.add(n);
    return n;
  }

  /** Follows `nc`'s status while it is open: down on a disconnect, up on a reconnect. */
  follow(nc: NatsConnection, onError: (err: Error) => void): void {
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') this.down();
        else if (s.type === 'reconnect') {
          try {
            this.up();
          } catch (err) {
            onError(err as Error);
          }
        }
      }
    })().catch(onError);
  }
}
