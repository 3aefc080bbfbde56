import { SpanKind, type Counter, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import {
  ErrorCodes,
  TaskStates,
  type WireError,
  encodePayload,
  isFinalTaskState,
  type Subjects,
  type TaskEvent,
  type TaskState,
} from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import {
  ProtocolError,
  isTerminalStatus,
  taskRequest,
  upstreamTaskOf,
  type TaskWireTarget,
  type UpstreamTask,
} from '@mcpx/mcp-client';
import { McpAttributes, endWithOutcome } from '@mcpx/telemetry';
import type { InputGate } from '../input-requests.js';
import { toWire } from '../wire-errors.js';
import { lostTask, toolError, type StoredOutcome } from './task-outcome.js';
import { TaskQuestions } from './task-questions.js';
import type { TaskStore } from './task-store.js';
import { type NewTask, type TaskRow } from './task-store.js';

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
  /** Told after each poll this instance made of a task (a legacy task's session is kept from idling). */
  onPolled?: (row: TaskRow) => void;
  /** The input-request path a task's questions (`input_required`) take; absent: they are not asked. */
  inputs?: InputGate;
}

/** How often the poll loop looks for due tasks. */
const TICK_MS = 200;
/** Tasks claimed per tick at most, and polled at once at most. */
const CLAIM_BATCH = 200;
const POLL_CONCURRENCY = 32;
const GET_TIMEOUT_MS = 30_000;
const RESULT_TIMEOUT_MS = 60_000;
const DEFAULT_POLL_MS = 1_000;
const STATUS_MESSAGE_MAX = 1_024;

/**
 * The durable broker of task-augmented calls (docs/tasks.md). A created task is a row before
 * anyone hears of it; every instance runs the same loop: claim the due tasks whose lease is free
 * (exactly one instance holds a task's lease; it lapses `leaseMs` after the holder stops renewing
 * it, and another instance takes the task over), `tasks/get` each at the server's `pollInterval`
 * (bounded, jittered), publish each change on `mcp.tasks.<acct>.<task>`, and fetch a completed
 * task's result once, kept bounded until its ttl ends. A task its server no longer knows ends
 * `failed` (`task_lost`); one past its ttl ends `expired`.
 */
export class TaskBroker {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private lastSweep = 0;
  private readonly waiters = new Map<string, Set<(row: TaskRow) => void>>();
  /** Consecutive failed polls per task (this instance's), for backoff. */
  private readonly failures = new Map<string, number>();
  /** Targets of the tasks this instance created (they carry the live session's question handler). */
  private readonly live = new Map<string, TaskWireTarget>();
  private readonly polls: Counter;
  private readonly pollDuration: Histogram;
  private readonly lifecycle: Counter;
  private readonly inflight = new Set<string>();
  private readonly questions: TaskQuestions | undefined;

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
              this.event(
                row.account_id,
                row.agent_id,
                row.id,
                TaskStates.inputRequired,
                row.status_message,
                undefined,
                inputRequestId,
              ),
          });
    this.polls = deps.meter.createCounter('mcpx_proxy_task_polls_total', {
      description: 'tasks/get polls of brokered tasks, by outcome',
    });
    this.pollDuration = deps.meter.createHistogram('mcpx_proxy_task_poll_duration_ms', {
      unit: 'ms',
      description: 'One poll of a brokered task (tasks/get, and tasks/result when it ended)',
    });
    this.lifecycle = deps.meter.createCounter('mcpx_proxy_tasks_total', {
      description: 'Brokered tasks by event: created, completed, failed, cancelled, expired, taken_over',
    });
  }

  start(): void {
    this.timer ??= setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  /**
   * Stops polling: polls under way finish (bounded), held question streams close, and this
   * instance's leases are released so another instance takes its tasks at its next tick, not
   * `leaseMs` later. Tasks whose poll is still under way keep their lease until it lapses.
   */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.questions?.stop();
    for (let i = 0; i < 50 && (this.inflight.size > 0 || this.ticking); i++)
      await new Promise((r) => setTimeout(r, 100));
    try {
      const released = await this.deps.store.release(this.deps.instance, [...this.inflight]);
      if (released > 0) this.deps.log.info('task leases released for another instance', { tasks: released });
    } catch (err) {
      this.deps.log.warn('task leases could not be released: they lapse instead', { err: err as Error });
    }
  }

  /** A poll's `tasks/get` ends within its lease: one outliving it lets another instance poll the task too (seen under heavy load). */
  private get getTimeoutMs(): number {
    return Math.max(1_000, Math.min(GET_TIMEOUT_MS, Math.floor(this.deps.settings.leaseMs / 2)));
  }

  /** The ttl a new task asks its server for, and keeps at most. */
  get maxTtlMs(): number {
    return this.deps.settings.maxTtlMs;
  }

  /**
   * Records a task its server just created, with this instance holding its lease; from here the
   * loop polls it. The row is written before the handle goes back to anyone.
   */
  async adopt(
    t: Omit<NewTask, 'owner' | 'leaseMs' | 'ttlMs' | 'pollIntervalMs' | 'state' | 'statusMessage'>,
    created: UpstreamTask,
    target: TaskWireTarget,
  ): Promise<TaskRow | null> {
    const { settings } = this.deps;
    const ttlMs = Math.min(created.ttlMs ?? settings.maxTtlMs, settings.maxTtlMs);
    const pollIntervalMs = this.interval(created.pollIntervalMs);
    const state =
      created.status === 'completed' || created.status === 'failed' || created.status === 'cancelled'
        ? TaskStates.working
        : (created.status as TaskState);
    await this.deps.store.create({
      ...t,
      state,
      ...(created.statusMessage !== undefined ? { statusMessage: created.statusMessage } : {}),
      ttlMs,
      pollIntervalMs,
      owner: this.deps.instance,
      leaseMs: settings.leaseMs,
    });
    this.live.set(t.id, target);
    this.lifecycle.add(1, { event: 'created', dialect: t.dialect });
    this.event(t.account, t.agent, t.id, state, created.statusMessage ?? null);
    return await this.deps.store.get(t.account, t.id);
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

  /** The loop's turn: claim due tasks, poll them; now and then, expire and purge. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      if (Date.now() - this.lastSweep > 2_000) {
        this.lastSweep = Date.now();
        await this.expire();
      }
      const rows = await this.deps.store.claimDue(this.deps.instance, this.deps.settings.leaseMs, CLAIM_BATCH);
      const queue = rows.filter((r) => !this.inflight.has(r.id));
      const workers = Array.from({ length: Math.min(POLL_CONCURRENCY, queue.length) }, async () => {
        for (let row = queue.shift(); row !== undefined; row = queue.shift()) await this.poll(row);
      });
      await Promise.all(workers);
    } catch (err) {
      // Postgres away: nothing is lost (the rows wait), polling resumes when it answers.
      this.deps.log.warn('task polling could not claim tasks', { err: err as Error });
    } finally {
      this.ticking = false;
    }
  }

  /** One poll of a claimed task: `tasks/get`, and on its end the result, under a `proxy.task.poll` span. */
  async poll(row: TaskRow): Promise<void> {
    this.inflight.add(row.id);
    const started = performance.now();
    const span = this.deps.tracer.startSpan('proxy.task.poll', {
      kind: SpanKind.CLIENT,
      attributes: {
        'mcp.account': row.account_id,
        'mcpx.task': row.id,
        [McpAttributes.server]: row.server,
        [McpAttributes.methodName]: 'tasks/get',
        'mcpx.task.dialect': row.dialect,
      },
    });
    let outcome = 'ok';
    try {
      const target = this.live.get(row.id) ?? (await this.deps.target(row));
      const era = row.dialect === '2026-07-28' ? 'modern' : 'legacy';
      const task = upstreamTaskOf(
        await taskRequest(target, 'tasks/get', { taskId: row.upstream_task_id }, { timeoutMs: this.getTimeoutMs }),
        era,
        'tasks/get',
      );
      this.failures.delete(row.id);
      outcome = task.status;
      if (isTerminalStatus(task.status)) await this.ended(row, task, target, era);
      else if (await this.progressed(row, task)) {
        // A question goes to the input-request path; one the connector cannot put to anyone ends the task.
        const refusal = await this.questions?.polled(row, task, target, era);
        if (refusal !== undefined) await this.refused(row, refusal);
      }
      this.deps.onPolled?.(row);
    } catch (err) {
      outcome = await this.failed(row, err);
    } finally {
      this.inflight.delete(row.id);
      span.setAttribute('mcpx.task.status', outcome);
      endWithOutcome(span, outcome === 'error' || outcome === 'task_lost' ? outcome : undefined, outcome);
      span.end();
      this.polls.add(1, { outcome, dialect: row.dialect });
      this.pollDuration.record(performance.now() - started, { dialect: row.dialect });
    }
  }

  private async progressed(row: TaskRow, task: UpstreamTask): Promise<boolean> {
    const interval = this.interval(task.pollIntervalMs ?? row.poll_interval_ms);
    const message = task.statusMessage ?? null;
    const state = task.status as TaskState;
    const ok = await this.deps.store.polled(row.id, this.deps.instance, {
      state,
      statusMessage: message,
      pollIntervalMs: interval,
      nextPollAt: new Date(Date.now() + this.jitter(interval)),
    });
    if (!ok) return false;
    if (state !== row.state || message !== row.status_message)
      this.event(row.account_id, row.agent_id, row.id, state, message);
    return true;
  }

  /** A task whose question cannot be asked (a kind the connector does not answer, a quota): it ends `failed` with that error, and its server is asked to cancel it. */
  private async refused(row: TaskRow, error: WireError): Promise<void> {
    const outcome: StoredOutcome = { ok: false, error: error.toJSON() };
    const finished = await this.deps.store.finish(row.id, this.deps.instance, {
      state: TaskStates.failed,
      statusMessage: error.message.slice(0, STATUS_MESSAGE_MAX),
      result: encodePayload(outcome),
      error: { code: error.code, message: error.message },
    });
    if (finished === null) return;
    this.close(finished, error.code);
    void this.cancelUpstream(finished);
  }

  private async ended(
    row: TaskRow,
    task: UpstreamTask,
    target: TaskWireTarget,
    era: 'modern' | 'legacy',
  ): Promise<void> {
    const durationMs = Date.now() - new Date(row.created_at).getTime();
    let outcome: StoredOutcome;
    let state: TaskState = task.status;
    if (task.status === 'cancelled') {
      outcome = {
        ok: false,
        error: { code: ErrorCodes.cancelled, message: 'the task was cancelled', details: { task: row.id } },
      };
    } else if (era === 'modern') {
      outcome =
        task.status === 'completed' && task.result !== undefined
          ? this.deps.shape(row, task.result, durationMs)
          : {
              ok: false,
              error: {
                code: ErrorCodes.serverError,
                message: task.error?.message ?? 'the task failed',
                details: { task: row.id, mcpCode: task.error?.code ?? -32603 },
              },
            };
    } else {
      // 2025-11-25: the result (or the failure) is fetched with tasks/result, once (the question stream's, when one is open).
      try {
        const streamed = await this.questions?.streamed(row.id);
        if (streamed !== undefined && 'error' in streamed) throw streamed.error;
        const result =
          streamed?.result ??
          (await taskRequest(
            target,
            'tasks/result',
            { taskId: row.upstream_task_id },
            { timeoutMs: RESULT_TIMEOUT_MS },
          ));
        outcome = this.deps.shape(row, result, durationMs);
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err;
        outcome = {
          ok: false,
          error: {
            code: ErrorCodes.serverError,
            message: err.message.slice(0, STATUS_MESSAGE_MAX),
            details: { task: row.id, mcpCode: err.code },
          },
        };
      }
    }
    if (state === 'completed' && !outcome.ok && !toolError(outcome)) state = TaskStates.failed;
    const finished = await this.deps.store.finish(row.id, this.deps.instance, {
      state,
      statusMessage: task.statusMessage ?? null,
      result: encodePayload(outcome),
      ...(outcome.ok ? {} : { error: { code: outcome.error.code, message: outcome.error.message } }),
    });
    if (finished !== null) this.close(finished, outcome.ok ? undefined : outcome.error.code);
  }

  /** A poll that failed: the server forgot the task (it ends `failed`), or could not be reached (polled again later, backing off). */
  private async failed(row: TaskRow, err: unknown): Promise<string> {
    if (lostTask(err)) {
      const message = 'the server no longer knows the task (it restarted, or dropped it): it cannot finish';
      const outcome: StoredOutcome = {
        ok: false,
        error: { code: ErrorCodes.serverError, message, details: { task: row.id, reason: 'task_lost' } },
      };
      const finished = await this.deps.store
        .finish(row.id, this.deps.instance, {
          state: TaskStates.failed,
          statusMessage: message,
          result: encodePayload(outcome),
          error: { code: 'task_lost', message },
        })
        .catch(() => null);
      if (finished !== null) this.close(finished, 'task_lost');
      return 'task_lost';
    }
    const n = (this.failures.get(row.id) ?? 0) + 1;
    this.failures.set(row.id, n);
    if (this.failures.size > 100_000) this.failures.delete(this.failures.keys().next().value as string);
    const wait = Math.min(row.poll_interval_ms * 2 ** Math.min(n, 6), this.deps.settings.pollMaxMs);
    this.deps.log.warn('a task poll failed; polled again later', {
      task: row.id,
      server: row.server,
      code: toWire(err).code,
      attempt: n,
    });
    await this.deps.store
      .polled(row.id, this.deps.instance, {
        state: row.state as TaskState,
        statusMessage: row.status_message,
        pollIntervalMs: row.poll_interval_ms,
        nextPollAt: new Date(Date.now() + this.jitter(wait)),
      })
      .catch(() => false);
    return 'error';
  }

  /** Open tasks past their ttl end `expired` (their server is asked to cancel them, best effort); finished ones past it are purged. */
  private async expire(): Promise<void> {
    const rows = await this.deps.store.expiring(100);
    for (const row of rows) {
      const message = 'the task outlived its ttl';
      const outcome: StoredOutcome = {
        ok: false,
        error: { code: ErrorCodes.timeout, message, details: { task: row.id, reason: 'task_expired' } },
      };
      const finished = await this.deps.store.finish(row.id, null, {
        state: TaskStates.expired,
        statusMessage: message,
        result: encodePayload(outcome),
        error: { code: 'task_expired', message },
      });
      if (finished === null) continue;
      this.close(finished, 'task_expired');
      void this.cancelUpstream(finished);
    }
    await this.deps.store.purge(500);
  }

  /**
   * Cancels a task for its account: the server is asked (`tasks/cancel`), and the task ends
   * `cancelled` whatever it answers (a server that cannot cancel has nothing left to say to us).
   * Any instance may; null when the task had ended already.
   */
  async cancel(row: TaskRow): Promise<TaskRow | null> {
    await this.cancelUpstream(row);
    const outcome: StoredOutcome = {
      ok: false,
      error: { code: ErrorCodes.cancelled, message: 'the task was cancelled', details: { task: row.id } },
    };
    const finished = await this.deps.store.finish(row.id, null, {
      state: TaskStates.cancelled,
      statusMessage: 'cancelled by the caller',
      result: encodePayload(outcome),
      error: { code: ErrorCodes.cancelled, message: 'the task was cancelled' },
    });
    if (finished !== null) this.close(finished, ErrorCodes.cancelled);
    return finished;
  }

  private async cancelUpstream(row: TaskRow): Promise<void> {
    try {
      const target = this.live.get(row.id) ?? (await this.deps.target(row));
      await taskRequest(target, 'tasks/cancel', { taskId: row.upstream_task_id }, { timeoutMs: GET_TIMEOUT_MS });
    } catch (err) {
      this.deps.log.info('tasks/cancel was not accepted upstream', { task: row.id, code: toWire(err).code });
    }
  }

  /** A task this instance ended: its event, its waiters, its count, its session. */
  private close(row: TaskRow, errorCode: string | undefined): void {
    this.live.delete(row.id);
    this.failures.delete(row.id);
    this.questions?.ended(row.id);
    this.lifecycle.add(1, { event: row.state, dialect: row.dialect });
    this.event(row.account_id, row.agent_id, row.id, row.state as TaskState, row.status_message, errorCode);
    const set = this.waiters.get(row.id);
    if (set !== undefined) for (const w of [...set]) w(row);
    try {
      this.deps.onEnded?.(row);
    } catch {
      // The owner's hook fails on its own.
    }
  }

  private event(
    account: string,
    agent: string,
    task: string,
    state: TaskState,
    statusMessage: string | null,
    errorCode?: string,
    inputRequestId?: string,
  ): void {
    const event: TaskEvent = {
      account,
      agent,
      task,
      state,
      at: Date.now(),
      ...(statusMessage !== null ? { statusMessage: statusMessage.slice(0, STATUS_MESSAGE_MAX) } : {}),
      ...(errorCode ? { errorCode } : {}),
      ...(inputRequestId !== undefined ? { inputRequestId } : {}),
    };
    try {
      this.deps.publish(this.deps.subjects.taskStatus(account, task), event);
    } catch (err) {
      this.deps.log.warn('a task event could not be published', { task, err: err as Error });
    }
  }

  /** A server's poll interval within the operator's bounds (absent: 1 s). */
  private interval(ms: number | undefined): number {
    const { pollMinMs, pollMaxMs } = this.deps.settings;
    return Math.min(Math.max(ms ?? DEFAULT_POLL_MS, pollMinMs), pollMaxMs);
  }

  /** ±10 %: tasks created together do not poll together forever. */
  private jitter(ms: number): number {
    return Math.round(ms * (0.9 + Math.random() * 0.2));
  }
}

export { isFinalTaskState };
export { readOutcome, type StoredOutcome } from './task-outcome.js';
