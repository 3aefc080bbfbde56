import type { NatsConnection } from '@nats-io/transport-node';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Counter,
  type Meter,
  type Tracer,
} from '@opentelemetry/api';
import { ENDPOINT_RUN_PREFIX, decodeTaskEvent, type Subjects } from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import type { TokenGrant } from './agent-tokens.js';
import type { StreamMessage } from './legacy-subscriptions.js';
import { askingClient, legacyWireTask } from './task-wire.js';

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
 * counted in `mcpx_endpoint_task_notifications_total{outcome, dialect}` (`sent`, `coalesced`,
 * `unchanged`, `foreign`, `dropped`, `error`, `closed`). The same relay, narrowed to the task ids a
 * 2026-07-28 listen named, sends that dialect's `notifications/tasks` ({@link TaskStatusRelay.listen}).
 */
export class TaskStatusRelay {
  private readonly counter: Counter;
  private readonly coalesceMs: number;
  private readonly tasks: TaskClient;

  constructor(private readonly deps: TaskStatusRelayDeps) {
    this.tasks = deps.tasks ?? new TaskClient(deps.nc, deps.subjects);
    this.counter = deps.meter.createCounter('mcpx_endpoint_task_notifications_total', {
      description: "Task status notifications to the endpoint's clients, by outcome and dialect (legacy, modern)",
    });
    this.coalesceMs = deps.coalesceMs ?? STATUS_COALESCE_MS;
  }

  /** Relays the token's task statuses to `send` (one GET stream of `face`) until the returned detach. */
  stream(grant: TokenGrant, face: string | undefined, send: (m: StreamMessage) => void): () => void {
    /** Tasks known not to be this stream's (another token's, or another face's): never read again. */
    const foreign = new Set<string>();
    return this.relay(grant, {
      dialect: 'legacy',
      hears: (task) => !foreign.has(task),
      render: async (task, tasks) => {
        const view = await tasks.getTask(grant.account, task);
        const mine =
          view.run === `${ENDPOINT_RUN_PREFIX}${grant.id}` &&
          view.agent === grant.agent &&
          (face === undefined || view.server === face);
        // `input_required` while the task asks this client (it takes the questions with tasks/result), `working` again once answered.
        if (mine)
          return {
            method: 'notifications/tasks/status',
            params: legacyWireTask(view, await askingClient(tasks, grant.account, view)),
          };
        if (foreign.size >= REMEMBERED_MAX) foreign.clear();
        foreign.add(task);
        return undefined;
      },
      send,
    });
  }

  /**
   * Relays the tasks of `taskIds` (already checked to be the token's, task-listen.ts) to `send`
   * as `render` shows each (2026-07-28 `notifications/tasks`), each one's current status first,
   * until the returned detach. Events of any other task are not read.
   */
  listen(
    grant: TokenGrant,
    taskIds: readonly string[],
    render: RelayTarget['render'],
    send: (m: StreamMessage) => void,
  ): () => void {
    const ids = new Set(taskIds);
    const relay = this.open(grant, { dialect: 'modern', hears: (task) => ids.has(task), render, send });
    for (const id of ids) relay.hear(id);
    return relay.detach;
  }

  private relay(grant: TokenGrant, target: RelayTarget): () => void {
    return this.open(grant, target).detach;
  }

  /** One stream's relay: the account's task events it hears, coalesced per task, each read and rendered when it goes out. */
  private open(grant: TokenGrant, target: RelayTarget): { hear: (task: string) => void; detach: () => void } {
    const sub = this.deps.nc.subscribe(this.deps.subjects.taskEventsOf(grant.account));
    const pending = new Map<string, Pending>();
    const lastSent = new Map<string, { at: number; key: string }>();
    let open = true;
    const flush = (task: string): void => {
      pending.delete(task);
      if (!open) return;
      void this.relayOne(grant, task, target, lastSent, () => open);
    };
    const hear = (task: string): void => {
      if (!target.hears(task)) return;
      const { dialect } = target;
      if (pending.has(task)) return void this.counter.add(1, { outcome: 'coalesced', dialect });
      if (pending.size >= STATUS_PENDING_MAX) return void this.counter.add(1, { outcome: 'dropped', dialect });
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
    const detach = (): void => {
      if (!open) return;
      open = false;
      sub.unsubscribe();
      for (const p of pending.values()) clearTimeout(p.timer);
      pending.clear();
    };
    return { hear, detach };
  }

  /** Reads the task and sends it when it is the stream's and changed since the last one sent. */
  private async relayOne(
    grant: TokenGrant,
    task: string,
    target: RelayTarget,
    lastSent: Map<string, { at: number; key: string }>,
    isOpen: () => boolean,
  ): Promise<void> {
    const span = this.deps.tracer.startSpan('endpoint.tasks/status', {
      kind: SpanKind.PRODUCER,
      attributes: { 'mcpx.account': grant.account, 'mcpx.agent': grant.agent, 'mcpx.task.dialect': target.dialect },
    });
    let outcome = 'sent';
    try {
      let note: StreamMessage | undefined;
      try {
        // The row is read with the span's context, passed by hand: the proxy's task span is its child.
        note = await target.render(task, this.tasks.withTrace(trace.setSpan(ROOT_CONTEXT, span)));
      } catch {
        outcome = 'error';
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'task not readable' });
        return;
      }
      if (note === undefined) {
        outcome = 'foreign';
        return;
      }
      const params = note.params ?? {};
      const asks = Object.keys((params.inputRequests as object | null | undefined) ?? {})
        .sort()
        .join(',');
      const message = typeof params.statusMessage === 'string' ? params.statusMessage : '';
      const key = `${String(params.status)}\u0000${message}\u0000${asks}`;
      if (lastSent.get(task)?.key === key) {
        outcome = 'unchanged';
        return;
      }
      if (!isOpen()) {
        outcome = 'closed';
        return;
      }
      if (lastSent.size >= REMEMBERED_MAX) lastSent.clear();
      lastSent.set(task, { at: Date.now(), key });
      span.setAttribute('mcpx.task.status', String(params.status));
      target.send(note);
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      this.counter.add(1, { outcome, dialect: target.dialect });
    }
  }
}

/** What one stream relays: the tasks it may hear, how a task is shown on it (undefined: not its own), where it goes. */
interface RelayTarget {
  /** `legacy`: 2025 `notifications/tasks/status` on a GET stream; `modern`: 2026-07-28 `notifications/tasks` on a listen. */
  dialect: 'legacy' | 'modern';
  hears: (task: string) => boolean;
  /** `tasks`: the task client to read the task with (its requests carry the notification's span). */
  render: (task: string, tasks: TaskClient) => Promise<StreamMessage | undefined>;
  send: (m: StreamMessage) => void;
}
