import type { Meter, Tracer, Counter } from '@opentelemetry/api';
import { TaskStates, isFinalTaskState, type Subjects, type TaskEvent, type TaskState } from '@mcpx/contracts';
import { listenChannel, type ChannelListener } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import type { TaskWireTarget, UpstreamTask } from '@mcpx/mcp-client';
import type { InputGate } from '../input-requests.js';
import { STATUS_MESSAGE_MAX, TaskEnds } from './task-ends.js';
import type { StoredOutcome } from './task-outcome.js';
import { TaskPoller } from './task-poller.js';
import { TaskQuestions } from './task-questions.js';
import { TASKS_CHANNEL, TaskNotices } from './task-notices.js';
import type { NewTask, TaskRow, TaskStore } from './task-store.js';

/** Created tasks' records looked up by one sweep at most. */
const LIVE_SWEEP_BATCH = 500;

export interface TaskBrokerSettings {
  maxTtlMs: number;
  leaseMs: number;
  pollMinMs: number;
  pollMaxMs: number;
}

export interface TaskBrokerDeps {
  store: TaskStore;
  instance: string;
  settings: TaskBrokerSettings;
  /** Where a task's requests go now: the server's current URL and credentials, the row's era, version and session. */
  target: (row: TaskRow) => Promise<TaskWireTarget>;
  /** A completed task's result as the call would have answered it, bounded as a call's reply is. */
  shape: (row: TaskRow, result: Record<string, unknown>, durationMs: number) => StoredOutcome;
  publish: (subject: string, event: TaskEvent) => void;
  subjects: Subjects;
  tracer: Tracer;
  meter: Meter;
  log: Logger;
  /** Told when this instance ended a task (a legacy task's session is closed then). */
  onEnded?: (row: TaskRow) => void;
  /** Told after each poll this instance made of a task. */
  onPolled?: (row: TaskRow) => void;
  /** The input-request path a task's questions (`input_required`) take; absent: they are not asked. */
  inputs?: InputGate;
  /**
   * Where to listen for the other instances' task notices ({@link TASKS_CHANNEL}); absent: none
   * heard (a task let go is found at the loop's next look; a call waits for a task ended
   * elsewhere until its bound).
   */
  databaseUrl?: string;
}

/**
 * The durable broker of task-augmented calls (docs/tasks.md). A created task is a row before anyone
 * hears of it; every instance runs the same poll loop ({@link TaskPoller}: claim the due tasks whose
 * lease is this instance's, free or lapsed, `tasks/get` each at the server's `pollInterval`, bounded
 * and jittered); each change is published on `mcp.tasks.<acct>.<task>`; how a task ends (its
 * result fetched once and kept, bounded, until its ttl ends; `task_lost`; `expired`; `cancelled`)
 * is {@link TaskEnds}'. This class holds them together: a new task adopted, its waiters, its events.
 */
export class TaskBroker {
  private readonly waiters = new Map<string, Set<(row: TaskRow) => void>>();
  /**
   * Targets of the open tasks this instance created (they carry the live session's question
   * handler), with when this instance last knew the task open: its creation, its last poll here,
   * or the last look at its row. A task that ends on another instance (this one lost its lease)
   * is forgotten by {@link sweepLive}, not only when this instance ends it.
   */
  private readonly live = new Map<string, { target: TaskWireTarget; seenAt: number }>();
  private liveTimer: NodeJS.Timeout | undefined;
  private notices: ChannelListener | undefined;
  /** Calls woken by the notice of their task's end on another instance (`/stats`' `taskWaitsWokenElsewhere`). */
  wokenElsewhere = 0;
  private readonly lifecycle: Counter;
  private readonly questions: TaskQuestions | undefined;
  private readonly ends: TaskEnds;
  private readonly poller: TaskPoller;

  constructor(private readonly deps: TaskBrokerDeps) {
    this.questions =
      deps.inputs === undefined
        ? undefined
        : new TaskQuestions({
            inputs: deps.inputs,
            store: deps.store,
            instance: deps.instance,
            log: deps.log,
            meter: deps.meter,
            tracer: deps.tracer,
            announce: (row, inputRequestId) =>
              this.event(row, TaskStates.inputRequired, row.status_message, undefined, inputRequestId),
          });
    this.lifecycle = deps.meter.createCounter('mcpx_proxy_tasks_total', {
      description: 'Brokered tasks by event: created, completed, failed, cancelled, expired',
    });
    const target = async (row: TaskRow): Promise<TaskWireTarget> =>
      this.live.get(row.id)?.target ?? (await deps.target(row));
    this.ends = new TaskEnds({
      store: deps.store,
      instance: deps.instance,
      log: deps.log,
      tracer: deps.tracer,
      target,
      shape: deps.shape,
      questions: this.questions,
      close: (row, errorCode) => this.close(row, errorCode),
    });
    this.poller = new TaskPoller({
      store: deps.store,
      instance: deps.instance,
      settings: deps.settings,
      target,
      ends: this.ends,
      questions: this.questions,
      changed: (row, state, message) => this.event(row, state, message),
      onPolled: (row) => {
        const live = this.live.get(row.id);
        if (live !== undefined) live.seenAt = Date.now();
        deps.onPolled?.(row);
      },
      tracer: deps.tracer,
      meter: deps.meter,
      log: deps.log,
    });
  }

  start(): void {
    this.poller.start();
    this.liveTimer ??= setInterval(() => void this.sweepLive(), this.liveSweepMs);
    this.liveTimer.unref();
    if (this.deps.databaseUrl !== undefined && this.notices === undefined)
      this.notices = listenChannel(this.deps.databaseUrl, TASKS_CHANNEL, {
        applicationName: `proxy-tasks ${this.deps.instance}`.slice(0, 63),
        onNotice: (payload) => this.heard(payload),
        // Notices sent while the channel was down are lost: what they would have said is read.
        onListening: () => {
          this.poller.due();
          for (const id of this.waiters.keys()) void this.endedElsewhere(id);
        },
        onLost: (err) =>
          this.deps.log.warn('task notices channel lost: reconnecting (the loop still looks at the rows)', {
            ...(err !== undefined ? { err } : {}),
          }),
      });
  }

  /** A notice of another instance: leases let go (a look for due tasks now), or a task this instance waits for ended there. */
  private heard(payload: string): void {
    if (payload === TaskNotices.freed) this.poller.due();
    else if (payload.startsWith(TaskNotices.ended)) {
      const id = payload.slice(TaskNotices.ended.length);
      if (this.waiters.has(id)) void this.endedElsewhere(id);
    }
  }

  /**
   * A task this instance waits for ended on another instance (it lost the lease, or a cancel was
   * answered there): the row as ended wakes its waiters, and this instance's record of it goes.
   */
  private async endedElsewhere(id: string): Promise<void> {
    let row: TaskRow | null;
    try {
      row = await this.deps.store.endedRow(id);
    } catch (err) {
      this.deps.log.warn('a task ended elsewhere could not be read: its call reads it at its bound', {
        task: id,
        err: err as Error,
      });
      return;
    }
    if (row === null) return;
    this.live.delete(id);
    this.poller.forget(id);
    this.questions?.ended(id);
    const set = this.waiters.get(id);
    if (set === undefined) return;
    this.wokenElsewhere++;
    for (const w of [...set]) w(row);
  }

  /** Open tasks this instance created and holds a record of (their live target). */
  get liveCount(): number {
    return this.live.size;
  }

  /** How long a created task goes unpolled here before its row is looked at (twice the lease: it was taken over, or is being). */
  private get liveSweepMs(): number {
    return Math.max(1_000, 2 * this.deps.settings.leaseMs);
  }

  /**
   * Forgets the records of created tasks that ended elsewhere: those this instance has not polled
   * for {@link liveSweepMs} are looked up (one statement, at most `LIVE_SWEEP_BATCH`); a finished
   * or purged one goes, an open one is looked at again a sweep later. A task this instance polls
   * costs no look-up.
   */
  async sweepLive(): Promise<number> {
    const cutoff = Date.now() - this.liveSweepMs;
    const stale: string[] = [];
    for (const [id, live] of this.live) {
      if (live.seenAt > cutoff) continue;
      stale.push(id);
      if (stale.length >= LIVE_SWEEP_BATCH) break;
    }
    if (stale.length === 0) return 0;
    let open: Set<string>;
    try {
      open = new Set(await this.deps.store.openOf(stale));
    } catch (err) {
      this.deps.log.warn('ended tasks could not be looked up: their records stay until the next sweep', {
        err: err as Error,
      });
      return 0;
    }
    const now = Date.now();
    let forgotten = 0;
    for (const id of stale) {
      const live = this.live.get(id);
      if (live === undefined) continue;
      if (open.has(id)) {
        live.seenAt = now;
        continue;
      }
      this.live.delete(id);
      this.poller.forget(id);
      this.questions?.ended(id);
      forgotten++;
    }
    return forgotten;
  }

  /**
   * Stops polling: polls under way finish (bounded), held question streams close, and this
   * instance's leases are released so another instance takes its tasks when they are next due, not
   * `leaseMs` after. Tasks whose poll is still under way keep their lease until it lapses.
   */
  async stop(): Promise<void> {
    if (this.liveTimer !== undefined) clearInterval(this.liveTimer);
    this.liveTimer = undefined;
    await this.notices?.stop();
    this.notices = undefined;
    this.questions?.stop();
    const busy = await this.poller.stop();
    try {
      const released = await this.deps.store.release(this.deps.instance, busy);
      if (released > 0) this.deps.log.info('task leases released for another instance', { tasks: released });
    } catch (err) {
      this.deps.log.warn('task leases could not be released: they lapse instead', { err: err as Error });
    }
  }

  /** The ttl a new task asks its server for, and keeps at most. */
  get maxTtlMs(): number {
    return this.deps.settings.maxTtlMs;
  }

  /** One turn of the poll loop (tests drive it; `start` runs it on a timer). */
  async tick(): Promise<void> {
    await this.poller.tick();
  }

  /**
   * Records a task its server just created, with this instance holding its lease; from here the
   * loop polls it. The row is written before the handle goes back to anyone, and answered as written.
   */
  async adopt(
    t: Omit<NewTask, 'owner' | 'leaseMs' | 'ttlMs' | 'pollIntervalMs' | 'state' | 'statusMessage'>,
    created: UpstreamTask,
    target: TaskWireTarget,
  ): Promise<TaskRow> {
    const { settings } = this.deps;
    const ttlMs = Math.min(created.ttlMs ?? settings.maxTtlMs, settings.maxTtlMs);
    const state = isFinalTaskState(created.status) ? TaskStates.working : (created.status as TaskState);
    const row = await this.deps.store.create({
      ...t,
      state,
      ...(created.statusMessage !== undefined ? { statusMessage: created.statusMessage } : {}),
      ttlMs,
      pollIntervalMs: this.poller.interval(created.pollIntervalMs),
      owner: this.deps.instance,
      leaseMs: settings.leaseMs,
    });
    this.live.set(t.id, { target, seenAt: Date.now() });
    // Its first poll: the loop, asleep until what it knew was next, wakes for it.
    this.poller.due(new Date(row.next_poll_at).getTime());
    this.lifecycle.add(1, { event: 'created', dialect: t.dialect });
    this.event(row, state, created.statusMessage ?? null);
    return row;
  }

  /** Waits until this instance sees the task end, at most `ms`; null when it is still open then. */
  async waitEnded(id: string, ms: number): Promise<TaskRow | null> {
    if (ms <= 0) return null;
    return await new Promise<TaskRow | null>((resolve) => {
      let set = this.waiters.get(id);
      if (set === undefined) this.waiters.set(id, (set = new Set()));
      const done = (row: TaskRow | null): void => {
        clearTimeout(timer);
        set.delete(onEnd);
        if (set.size === 0) this.waiters.delete(id);
        resolve(row);
      };
      const onEnd = (row: TaskRow): void => done(row);
      const timer = setTimeout(() => done(null), ms);
      set.add(onEnd);
    });
  }

  /** Cancels a task for its account (any instance may): see {@link TaskEnds.cancel}. */
  async cancel(row: TaskRow, trace?: Record<string, string>): Promise<TaskRow | null> {
    return await this.ends.cancel(row, trace);
  }

  /** A task this instance ended: its event, its waiters, its count, its session. */
  private close(row: TaskRow, errorCode: string | undefined): void {
    // Not created here: its creator may have a call waiting for it, told by a notice.
    if (!this.live.has(row.id))
      this.deps.store.notify(`${TaskNotices.ended}${row.id}`).catch((err: unknown) =>
        this.deps.log.warn('a task end could not be told to the other instances', {
          task: row.id,
          err: err as Error,
        }),
      );
    this.live.delete(row.id);
    this.poller.forget(row.id);
    this.questions?.ended(row.id);
    this.lifecycle.add(1, { event: row.state, dialect: row.dialect });
    this.event(row, row.state as TaskState, row.status_message, errorCode);
    const set = this.waiters.get(row.id);
    if (set !== undefined) for (const w of [...set]) w(row);
    try {
      this.deps.onEnded?.(row);
    } catch {
      // The owner's hook fails on its own.
    }
  }

  private event(
    row: TaskRow,
    state: TaskState,
    statusMessage: string | null,
    errorCode?: string,
    inputRequestId?: string,
  ): void {
    const event: TaskEvent = {
      account: row.account_id,
      agent: row.agent_id,
      task: row.id,
      state,
      at: Date.now(),
      ...(statusMessage !== null ? { statusMessage: statusMessage.slice(0, STATUS_MESSAGE_MAX) } : {}),
      ...(errorCode ? { errorCode } : {}),
      ...(inputRequestId !== undefined ? { inputRequestId } : {}),
    };
    try {
      this.deps.publish(this.deps.subjects.taskStatus(row.account_id, row.id), event);
    } catch (err) {
      this.deps.log.warn('a task event could not be published', { task: row.id, err: err as Error });
    }
  }
}

export { isFinalTaskState };
export { readOutcome, type StoredOutcome } from './task-outcome.js';
