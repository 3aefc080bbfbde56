import { ROOT_CONTEXT, trace, type Counter, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import { TaskStates, type TaskState } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { isTerminalStatus, taskRequest, upstreamTaskOf, type TaskWireTarget } from '@mcpx/mcp-client';
import { SpanKind, endWithOutcome, traceCarrier } from '@mcpx/telemetry';
import { toWire } from '../wire-errors.js';
import { EXPIRE_BATCH, type TaskEnds } from './task-ends.js';
import { lostTask } from './task-outcome.js';
import { taskSpanAttributes } from './task-rows.js';
import { LOOK_MAX_MS, PURGE_MS, RETRY_MS, TICK_MS, TurnTimer } from './task-turns.js';
import type { TaskQuestions } from './task-questions.js';
import type { TaskRow, TaskStore } from './task-store.js';

export interface TaskPollerSettings {
  leaseMs: number;
  pollMinMs: number;
  pollMaxMs: number;
}

export interface TaskPollerDeps {
  store: TaskStore;
  instance: string;
  settings: TaskPollerSettings;
  target: (row: TaskRow) => Promise<TaskWireTarget>;
  ends: TaskEnds;
  questions: TaskQuestions | undefined;
  /** A poll saw the task's state or status message change (written): its event. */
  changed: (row: TaskRow, state: TaskState, statusMessage: string | null) => void;
  onPolled?: (row: TaskRow) => void;
  tracer: Tracer;
  meter: Meter;
  log: Logger;
}

/** Polls under way at once at most; a tick claims only as many as are free. */
const POLL_CONCURRENCY = 64;
/**
 * How long a poll's `tasks/get` is waited for. Never cut short to fit the lease: a get given up on
 * may still reach its server (queued in its backlog) after the next one, so the poll holds its task
 * (renewing the claim) until the answer comes, and only a get this old is given up on. Long: a task
 * server on a loaded 2-core box took gets from its queue 75-90 s after they were sent.
 */
const GET_TIMEOUT_MS = 120_000;
/** The most a claim counts for a get under way (half the lease, at most 30 s): a poll still waiting past it renews the claim. */
const CLAIM_FLIGHT_MAX_MS = 30_000;
const DEFAULT_POLL_MS = 1_000;
/** A poll that changed nothing, or failed: written with the tick's one statement. */
interface Done {
  id: string;
  /** Its next poll: its interval (jittered) from the answer's time, or a failed poll's backoff. */
  next: Date;
}

/**
 * The poll loop (docs/tasks.md#the-broker). It sleeps until it has something to do: a task due
 * (as its last look at the rows, the answers since and the tasks created here since say), a claim
 * to renew, a ttl's end, or a notice; and looks at the rows at least once a lease. Its turn writes
 * the polls answered since the last in one statement, claims as many due tasks as it has free poll
 * slots in one statement and starts their polls at once, then looks for when the next is due. The
 * claim puts each task's next poll past the interval and the claim's flight (half the lease: no
 * instance polls it sooner, even if this one dies mid-request); a poll still waiting for its
 * `tasks/get` past half that renews its claim, so the task is not polled again while its get is
 * under way. The answer sets the next poll again, its interval (jittered) from the time the answer
 * came: two gets of one task are never closer than the interval less its jitter, whichever
 * instances make them. A get is given up on only after `GET_TIMEOUT_MS`.
 */
export class TaskPoller {
  private running = false;
  private readonly turns = new TurnTimer(TICK_MS, () => void this.tick());
  private ticking = false;
  /** A turn was asked for while one ran: it follows at once. */
  private again = false;
  /**
   * The earliest time a claim can find a task due (from the last {@link TaskStore.nextDue}, the
   * polls answered since, the tasks created here since, a notice): no claim is sent before it.
   */
  private claimFrom = 0;
  /** The earliest of those told while a look was under way (its answer may predate them). */
  private toldDuringLook = Infinity;
  /** The earliest end of an open task's ttl (the expiry sweep runs then). */
  private expireAt = 0;
  private purgeAt = 0;
  private done: Done[] = [];
  /** Consecutive failed polls per task (this instance's), for backoff. */
  private readonly failures = new Map<string, number>();
  readonly inflight = new Set<string>();
  /** When each poll under way last had its claim written (claimed or renewed): its task's next poll is at least an interval (less jitter) and the claim's flight after it. */
  private readonly claimedAt = new Map<string, number>();
  private readonly polls: Counter;
  private readonly claims: Histogram;
  private readonly pollDuration: Histogram;

  constructor(private readonly deps: TaskPollerDeps) {
    this.polls = deps.meter.createCounter('mcpx_proxy_task_polls_total', {
      description: 'tasks/get polls of brokered tasks, by outcome',
    });
    this.claims = deps.meter.createHistogram('mcpx_proxy_task_claim_size', {
      description: 'Tasks claimed by one tick (one statement)',
    });
    this.pollDuration = deps.meter.createHistogram('mcpx_proxy_task_poll_duration_ms', {
      unit: 'ms',
      description: 'One poll of a brokered task (tasks/get, and tasks/result when it ended)',
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.wake(Date.now());
  }

  /** Stops claiming; polls under way finish (bounded) and their outcomes are written. Answers the tasks still being polled. */
  async stop(): Promise<string[]> {
    this.running = false;
    this.turns.clear();
    for (let i = 0; i < 50 && (this.inflight.size > 0 || this.ticking); i++)
      await new Promise((r) => setTimeout(r, 100));
    await this.flush().catch(() => undefined);
    return [...this.inflight];
  }

  forget(id: string): void {
    this.failures.delete(id);
  }

  /**
   * A task may be claimable from `at` (epoch ms; now when absent): one created here (its first
   * poll), or let go by another instance (a notice). The loop looks then, if it would sleep past it.
   */
  due(at = Date.now()): void {
    this.mayClaim(at);
    this.wake(at);
  }

  /** A task may be claimable from `at`. */
  private mayClaim(at: number): void {
    this.claimFrom = Math.min(this.claimFrom, at);
    this.toldDuringLook = Math.min(this.toldDuringLook, at);
  }

  /** Sets the next turn at `at` (no sooner than `TICK_MS` after the last), unless one is set sooner. */
  private wake(at: number): void {
    if (!this.running) return;
    // A turn under way sets the next one from what it finds; one asked for now follows it.
    if (this.ticking) this.again ||= this.turns.when(at) <= Date.now();
    else this.turns.set(at);
  }

  /**
   * The loop's turn (docs/tasks.md#the-broker): the polls answered since the last one written, the
   * claims of polls still out renewed, and, when a task may be due, as many claimed as there are
   * free poll slots and their polls started, then when the next is due looked up; when due, the
   * expiry and purge sweeps. It then sleeps until the earliest of what it knows is next (a task's
   * poll, a renewal, a ttl's end, {@link LOOK_MAX_MS}), or until a poll answers or it is told.
   */
  async tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    this.turns.began();
    let full = false;
    try {
      if (Date.now() >= this.expireAt) {
        const n = await this.deps.ends.expire();
        // More than one sweep's worth: the next turn sweeps again (the look below sets it).
        this.expireAt = n >= EXPIRE_BATCH ? 0 : Infinity;
        this.claimFrom = 0;
      }
      await this.flush();
      await this.renew();
      const free = POLL_CONCURRENCY - this.inflight.size;
      if (free > 0 && this.running && Date.now() >= this.claimFrom) {
        // The purge rides on a turn that claims (it never wakes the loop by itself).
        if (Date.now() >= this.purgeAt) {
          this.purgeAt = Date.now() + PURGE_MS;
          await this.deps.ends.purge();
        }
        // Before the claim is sent: the claim's own time (the database's) is no earlier.
        const claimedAt = Date.now();
        const rows = await this.deps.store.claimDue(
          this.deps.instance,
          this.deps.settings.leaseMs,
          free,
          this.flightMs,
        );
        this.claims.record(rows.length);
        for (const row of rows) {
          // Still polled from an earlier claim: that poll writes its outcome.
          if (this.inflight.has(row.id)) continue;
          this.inflight.add(row.id);
          this.claimedAt.set(row.id, claimedAt);
          void this.poll(row).finally(() => {
            this.inflight.delete(row.id);
            this.claimedAt.delete(row.id);
            // Its outcome is written at the next turn (with the others answered by then).
            this.wake(Date.now() + TICK_MS);
          });
        }
        full = rows.length === free;
        // Some due: more may be by the next turn (a busy loop claims each turn, as it always
        // did). None: when the next is due is looked up, and the loop sleeps until then.
        if (rows.length > 0) this.claimFrom = Date.now();
        else await this.look();
      }
    } catch (err) {
      // Postgres away: nothing is lost (the rows wait), polling resumes when it answers.
      this.deps.log.warn('task polling could not claim tasks', { err: err as Error });
      const retry = Date.now() + RETRY_MS;
      this.claimFrom = Math.max(this.claimFrom, retry);
      if (this.expireAt < retry) this.expireAt = retry;
    } finally {
      this.ticking = false;
    }
    if (!this.running) return;
    if (full || this.again) {
      this.again = false;
      setImmediate(() => void this.tick());
      return;
    }
    this.wake(this.nextTurn());
  }

  /** When the next poll may be claimed and the next ttl ends, from the rows (one statement). */
  private async look(): Promise<void> {
    const now = Date.now();
    this.toldDuringLook = Infinity;
    const { pollInMs, expireInMs } = await this.deps.store.nextDue(this.deps.instance);
    this.claimFrom = Math.min(now + Math.min(pollInMs ?? Infinity, this.lookMaxMs), this.toldDuringLook);
    this.expireAt = expireInMs === null ? Infinity : now + expireInMs;
  }

  /** The earliest of what the loop knows is next: a claim, a renewal, a ttl's end, answers to write. */
  private nextTurn(): number {
    let at = Math.min(this.claimFrom, this.expireAt);
    if (this.done.length > 0) at = Math.min(at, Date.now() + TICK_MS);
    for (const claimed of this.claimedAt.values()) at = Math.min(at, claimed + this.flightMs / 2 + 1);
    return at;
  }

  /** The longest sleep without a look at the rows: the lease, at most {@link LOOK_MAX_MS}. */
  private get lookMaxMs(): number {
    return Math.max(TICK_MS, Math.min(LOOK_MAX_MS, this.deps.settings.leaseMs));
  }

  /**
   * Polls still waiting for their get past half of what their claim counted for it: their claims
   * renewed in one statement (each task's next poll an interval, less jitter, and the flight from
   * now; its lease past that). While this instance lives, no instance polls a task whose get is
   * still under way, however long its server takes to answer.
   */
  private async renew(): Promise<void> {
    const now = Date.now();
    const due: string[] = [];
    for (const [id, at] of this.claimedAt) if (now - at > this.flightMs / 2) due.push(id);
    if (due.length === 0) return;
    await this.deps.store.renew(this.deps.instance, this.deps.settings.leaseMs, due, this.flightMs);
    for (const id of due) if (this.claimedAt.has(id)) this.claimedAt.set(id, now);
  }

  /** The tick's one write of the polls that changed nothing (kept for the next tick when Postgres is away). */
  private async flush(): Promise<void> {
    if (this.done.length === 0) return;
    const batch = this.done;
    this.done = [];
    // Their next polls are due from then: a claim may find them.
    for (const d of batch) this.mayClaim(d.next.getTime());
    try {
      await this.deps.store.pollsDone(this.deps.instance, this.deps.settings.leaseMs, batch);
    } catch (err) {
      this.done = batch.concat(this.done).slice(-100_000);
      throw err;
    }
  }

  /** One poll of a claimed task: `tasks/get`, and on its end the result, under a `proxy.task.poll` span that its requests carry. */
  private async poll(row: TaskRow): Promise<void> {
    const started = performance.now();
    const span = this.deps.tracer.startSpan('proxy.task.poll', {
      kind: SpanKind.CLIENT,
      attributes: taskSpanAttributes(row, 'tasks/get'),
    });
    const carried = traceCarrier(trace.setSpan(ROOT_CONTEXT, span));
    let outcome = 'ok';
    /** When its get went out (a failed get's next poll waits for what it may still do on its server). */
    let sent: number | undefined;
    try {
      const target = await this.deps.target(row);
      if (Date.now() - (this.claimedAt.get(row.id) ?? 0) > this.flightMs + this.deps.settings.leaseMs) {
        // Its server's look-up outlived what the claim (or its last renewal) covers: another
        // instance may poll the task by now, and a get sent now could come closer to that one.
        outcome = 'late';
        this.done.push({ id: row.id, next: new Date() });
        return;
      }
      sent = Date.now();
      outcome = await this.get(row, target, carried);
      this.deps.onPolled?.(row);
    } catch (err) {
      outcome = await this.failed(row, err, sent === undefined ? 0 : Date.now() - sent);
    } finally {
      span.setAttribute('mcpx.task.status', outcome);
      endWithOutcome(span, outcome === 'error' || outcome === 'task_lost' ? outcome : undefined, outcome);
      span.end();
      this.polls.add(1, { outcome, dialect: row.dialect });
      this.pollDuration.record(performance.now() - started, { dialect: row.dialect });
    }
  }

  private async get(row: TaskRow, target: TaskWireTarget, carried: Record<string, string>): Promise<string> {
    const era = row.dialect === '2026-07-28' ? 'modern' : 'legacy';
    const opts = { timeoutMs: GET_TIMEOUT_MS, trace: carried };
    const task = upstreamTaskOf(
      await taskRequest(target, 'tasks/get', { taskId: row.upstream_task_id }, opts),
      era,
      'tasks/get',
    );
    // The server had the request by now: the next poll is counted from here.
    const answered = Date.now();
    this.failures.delete(row.id);
    if (isTerminalStatus(task.status)) {
      await this.deps.ends.ended(row, task, target, era, carried);
      return task.status;
    }
    const state = task.status as TaskState;
    const message = task.statusMessage ?? null;
    const interval = this.interval(task.pollIntervalMs ?? row.poll_interval_ms);
    if (
      state === row.state &&
      message === row.status_message &&
      interval === row.poll_interval_ms &&
      state !== TaskStates.inputRequired
    ) {
      this.done.push({ id: row.id, next: new Date(answered + jitter(interval)) });
      return task.status;
    }
    const nextPollAt = new Date(answered + jitter(interval));
    const ok = await this.deps.store.polled(row.id, this.deps.instance, {
      state,
      statusMessage: message,
      pollIntervalMs: interval,
      nextPollAt,
      leaseMs: this.deps.settings.leaseMs,
    });
    this.mayClaim(nextPollAt.getTime());
    if (!ok) return task.status;
    if (state !== row.state || message !== row.status_message) this.deps.changed(row, state, message);
    // A question goes to the input-request path; one the connector cannot put to anyone ends the task.
    const refusal = await this.deps.questions?.polled(row, task, target, era, carried);
    if (refusal !== undefined) await this.deps.ends.refused(row, refusal, carried);
    return task.status;
  }

  /** A poll that failed: the server forgot the task (it ends `failed`), or could not be reached (polled again later, backing off). */
  private async failed(row: TaskRow, err: unknown, outMs: number): Promise<string> {
    if (lostTask(err)) {
      await this.deps.ends.lost(row);
      return 'task_lost';
    }
    const n = (this.failures.get(row.id) ?? 0) + 1;
    this.failures.set(row.id, n);
    if (this.failures.size > 100_000) this.failures.delete(this.failures.keys().next().value as string);
    // A get given up on may still be taken from its server's queue later: the longer it was out
    // (a timeout: its server is that far behind), the longer the next one waits, past the backoff.
    const wait = Math.max(
      Math.min(row.poll_interval_ms * 2 ** Math.min(n, 6), this.deps.settings.pollMaxMs),
      2 * outMs,
    );
    this.deps.log.warn('a task poll failed; polled again later', {
      task: row.id,
      server: row.server,
      code: toWire(err).code,
      attempt: n,
    });
    this.done.push({ id: row.id, next: new Date(Date.now() + jitter(wait)) });
    return 'error';
  }

  /** What a claim counts for its get (half the lease, at most 30 s) in the task's next poll; a longer get renews it. */
  private get flightMs(): number {
    return Math.max(1_000, Math.min(CLAIM_FLIGHT_MAX_MS, Math.floor(this.deps.settings.leaseMs / 2)));
  }

  /** A server's poll interval within the operator's bounds (absent: 1 s). */
  interval(ms: number | undefined): number {
    const { pollMinMs, pollMaxMs } = this.deps.settings;
    return Math.min(Math.max(ms ?? DEFAULT_POLL_MS, pollMinMs), pollMaxMs);
  }
}

/** ±10 %: tasks created together do not poll together forever (the claim jitters the same way). */
function jitter(ms: number): number {
  return Math.round(ms * (0.9 + Math.random() * 0.2));
}
