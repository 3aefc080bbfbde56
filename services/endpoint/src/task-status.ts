import type { NatsConnection } from '@nats-io/transport-node';
import { SpanKind, SpanStatusCode, type Counter, type Meter, type Tracer } from '@opentelemetry/api';
import { ENDPOINT_RUN_PREFIX, decodeTaskEvent, type Subjects, type TaskView } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import type { TokenGrant } from './agent-tokens.js';
import type { StreamMessage } from './legacy-subscriptions.js';
import { wireTask } from './task-wire.js';

/** A task's notifications on one stream are at most one per this long: the changes between are coalesced to the latest. */
export const STATUS_COALESCE_MS = 500;

/** Tasks with a notification pending on one stream at most; events of others are dropped (the client polls `tasks/get`). */
export const STATUS_PENDING_MAX = 200;

/** Tasks remembered per stream as not its own (never read again) or as sent; past this the memory starts over. */
const REMEMBERED_MAX = 10_000;

export interface TaskStatusRelayDeps {
  nc: NatsConnection;
  subjects: Subjects;
  /** `mcp.proxy.tasks`: the task's row, read when a notification goes out (the event is only a hint); default: one on `nc`. */
  tasks?: TaskClient;
  tracer: Tracer;
  meter: Meter;
  coalesceMs?: number;
}

interface Pending {
  timer: NodeJS.Timeout;
}

/**
 * 2025-11-25 `notifications/tasks/status` to the endpoint's clients (docs/endpoint.md#tasks): a
 * 2025 client's GET stream hears the account's task events (`mcp.tasks.<acct>.>`, published by
 * the proxy polling each task) and, for the tasks made by the stream's own token (the row's run
 * `ep-<token id>`, its agent, and on a per-server face that server), sends the task as `tasks/get`
 * would show it then. The event is a hint only: the row is read when the notification goes out,
 * so what is sent is the latest status, and another token's task is never sent (its row says so).
 * Bounded: one notification per task per {@link STATUS_COALESCE_MS} on a stream (changes between
 * coalesce to the latest), the same status twice is sent once, at most {@link STATUS_PENDING_MAX}
 * tasks pending. A span (`endpoint.tasks/status`) per notification read and sent or withheld,
 * counted in `mcpx_endpoint_task_notifications_total{outcome}` (`sent`, `coalesced`, `unchanged`,
 * `foreign`, `dropped`, `error`).
 */
export class TaskStatusRelay {
  private readonly counter: Counter;
  private readonly coalesceMs: number;
  private readonly tasks: TaskClient;

  constructor(private readonly deps: TaskStatusRelayDeps) {
    this.tasks = deps.tasks ?? new TaskClient(deps.nc, deps.subjects);
    this.counter = deps.meter.createCounter('mcpx_endpoint_task_notifications_total', {
      description: "Task status notifications to the endpoint's 2025 clients, by outcome",
    });
    this.coalesceMs = deps.coalesceMs ?? STATUS_COALESCE_MS;
  }

  /** Relays the token's task statuses to `send` (one GET stream of `face`) until the returned detach. */
  stream(grant: TokenGrant, face: string | undefined, send: (m: StreamMessage) => void): () => void {
    const sub = this.deps.nc.subscribe(this.deps.subjects.taskEventsOf(grant.account));
    const pending = new Map<string, Pending>();
    const lastSent = new Map<string, { at: number; key: string }>();
    /** Tasks known not to be this stream's (another token's, or another face's): never read again. */
    const foreign = new Set<string>();
    let open = true;
    const flush = (task: string): void => {
      pending.delete(task);
      if (!open) return;
      void this.relayOne(grant, face, task, lastSent, foreign, send);
    };
    const hear = (task: string): void => {
      if (foreign.has(task)) return;
      if (pending.has(task)) return void this.counter.add(1, { outcome: 'coalesced' });
      if (pending.size >= STATUS_PENDING_MAX) return void this.counter.add(1, { outcome: 'dropped' });
      const since = Date.now() - (lastSent.get(task)?.at ?? 0);
      const wait = Math.max(0, this.coalesceMs - since);
      pending.set(task, { timer: setTimeout(() => flush(task), wait) });
    };
    void (async () => {
      for await (const msg of sub) {
        try {
          const event = decodeTaskEvent(msg.data);
          if (event.account === grant.account && event.agent === grant.agent) hear(event.task);
        } catch {
          // not a task event: ignored
        }
      }
    })();
    return () => {
      if (!open) return;
      open = false;
      sub.unsubscribe();
      for (const p of pending.values()) clearTimeout(p.timer);
      pending.clear();
    };
  }

  /** Reads the task's row and sends it when it is this stream's and changed since the last one sent. */
  private async relayOne(
    grant: TokenGrant,
    face: string | undefined,
    task: string,
    lastSent: Map<string, { at: number; key: string }>,
    foreign: Set<string>,
    send: (m: StreamMessage) => void,
  ): Promise<void> {
    const span = this.deps.tracer.startSpan('endpoint.tasks/status', {
      kind: SpanKind.PRODUCER,
      attributes: { 'mcpx.account': grant.account, 'mcpx.agent': grant.agent },
    });
    let outcome = 'sent';
    try {
      let view: TaskView;
      try {
        view = await this.tasks.getTask(grant.account, task);
      } catch {
        outcome = 'error';
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'task not readable' });
        return;
      }
      const mine =
        view.run === `${ENDPOINT_RUN_PREFIX}${grant.id}` &&
        view.agent === grant.agent &&
        (face === undefined || view.server === face);
      if (!mine) {
        if (foreign.size >= REMEMBERED_MAX) foreign.clear();
        foreign.add(task);
        outcome = 'foreign';
        return;
      }
      const params = wireTask(view, 'legacy');
      const key = `${view.state}\u0000${typeof params.statusMessage === 'string' ? params.statusMessage : ''}`;
      if (lastSent.get(task)?.key === key) {
        outcome = 'unchanged';
        return;
      }
      if (lastSent.size >= REMEMBERED_MAX) lastSent.clear();
      lastSent.set(task, { at: Date.now(), key });
      span.setAttribute('mcpx.task.status', String(params.status));
      send({ method: 'notifications/tasks/status', params });
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      this.counter.add(1, { outcome });
    }
  }
}
