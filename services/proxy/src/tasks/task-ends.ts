import { ErrorCodes, TaskStates, type WireError, encodePayload, type TaskState } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import { SpanKind, endWithOutcome, traceCarrier, type Tracer } from '@mcpx/telemetry';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { ProtocolError, taskRequest, type TaskWireTarget, type UpstreamTask } from '@mcpx/mcp-client';
import { toWire } from '../wire-errors.js';
import { toolError, type StoredOutcome } from './task-outcome.js';
import { taskSpanAttributes } from './task-rows.js';
import type { TaskQuestions } from './task-questions.js';
import type { TaskRow, TaskStore } from './task-store.js';

const RESULT_TIMEOUT_MS = 60_000;
const CANCEL_TIMEOUT_MS = 30_000;
export const STATUS_MESSAGE_MAX = 1_024;
/** Open tasks past their ttl ended by one sweep at most (more: the next sweep follows at once). */
export const EXPIRE_BATCH = 100;

export interface TaskEndsDeps {
  store: TaskStore;
  instance: string;
  log: Logger;
  /** Each expiry's `proxy.task.expire` span, whose context its `tasks/cancel` carries. */
  tracer: Tracer;
  /** Where a task's requests go now (the creating instance's live target first). */
  target: (row: TaskRow) => Promise<TaskWireTarget>;
  /** A completed task's result as the call would have answered it, bounded as a call's reply is. */
  shape: (row: TaskRow, result: Record<string, unknown>, durationMs: number) => StoredOutcome;
  questions: TaskQuestions | undefined;
  /** A task this instance ended: its event, its waiters, its count, its session. */
  close: (row: TaskRow, errorCode: string | undefined) => void;
}

/**
 * How a task ends (docs/tasks.md#the-broker), once: the row is finished first (a finished row is
 * never written again; a poller's write is fenced by its lease), then `close` tells everyone. Its
 * result fetched and kept (a completed one), its typed error (a failed, lost, refused, expired or
 * cancelled one), and its server asked to cancel what it would go on running for nobody.
 */
export class TaskEnds {
  constructor(private readonly deps: TaskEndsDeps) {}

  /**
   * A poll saw the task end upstream: its outcome kept (a 2025 task's result fetched with
   * `tasks/result`, once, carrying the poll's trace context `trace`).
   */
  async ended(
    row: TaskRow,
    task: UpstreamTask,
    target: TaskWireTarget,
    era: 'modern' | 'legacy',
    trace?: Record<string, string>,
  ): Promise<void> {
    const durationMs = Date.now() - new Date(row.created_at).getTime();
    let outcome: StoredOutcome;
    let state: TaskState = task.status;
    if (task.status === 'cancelled') outcome = cancelledOutcome(row);
    else if (era === 'modern') {
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
    } else outcome = await this.legacyOutcome(row, target, durationMs, trace);
    if (state === 'completed' && !outcome.ok && !toolError(outcome)) state = TaskStates.failed;
    const finished = await this.deps.store.finish(row.id, this.deps.instance, {
      state,
      statusMessage: task.statusMessage ?? null,
      result: encodePayload(outcome),
      ...(outcome.ok ? {} : { error: { code: outcome.error.code, message: outcome.error.message } }),
    });
    if (finished !== null) this.deps.close(finished, outcome.ok ? undefined : outcome.error.code);
  }

  /** 2025-11-25: the result (or the failure) is fetched with tasks/result, once (the question stream's, when one is open). */
  private async legacyOutcome(
    row: TaskRow,
    target: TaskWireTarget,
    durationMs: number,
    trace: Record<string, string> | undefined,
  ): Promise<StoredOutcome> {
    try {
      const streamed = await this.deps.questions?.streamed(row.id);
      if (streamed !== undefined && 'error' in streamed) throw streamed.error;
      const result =
        streamed?.result ??
        (await taskRequest(
          target,
          'tasks/result',
          { taskId: row.upstream_task_id },
          { timeoutMs: RESULT_TIMEOUT_MS, ...(trace !== undefined ? { trace } : {}) },
        ));
      return this.deps.shape(row, result, durationMs);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      return {
        ok: false,
        error: {
          code: ErrorCodes.serverError,
          message: err.message.slice(0, STATUS_MESSAGE_MAX),
          details: { task: row.id, mcpCode: err.code },
        },
      };
    }
  }

  /** The server no longer knows the task (it restarted, or dropped it): it ends `failed` (`task_lost`), never hangs. */
  async lost(row: TaskRow): Promise<void> {
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
    if (finished !== null) this.deps.close(finished, 'task_lost');
  }

  /** A task whose question cannot be asked (a kind the connector does not answer, a quota): it ends `failed` with that error, and its server is asked to cancel it (under the poll's trace context `trace`). */
  async refused(row: TaskRow, error: WireError, trace?: Record<string, string>): Promise<void> {
    const outcome: StoredOutcome = { ok: false, error: error.toJSON() };
    const finished = await this.deps.store.finish(row.id, this.deps.instance, {
      state: TaskStates.failed,
      statusMessage: error.message.slice(0, STATUS_MESSAGE_MAX),
      result: encodePayload(outcome),
      error: { code: error.code, message: error.message },
    });
    if (finished === null) return;
    this.deps.close(finished, error.code);
    void this.cancelUpstream(finished, trace);
  }

  /** Open tasks past their ttl end `expired` (their server is asked to cancel them, best effort), at most `EXPIRE_BATCH` at once: answers how many were looked at. */
  async expire(): Promise<number> {
    const rows = await this.deps.store.expiring(EXPIRE_BATCH);
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
      this.deps.close(finished, 'task_expired');
      void this.cancelExpired(finished);
    }
    return rows.length;
  }

  /** Finished tasks past their ttl: their results go, and their rows an hour later. */
  async purge(): Promise<void> {
    await this.deps.store.purge(500);
  }

  /**
   * Cancels a task for its account: the server is asked (`tasks/cancel`), and the task ends
   * `cancelled` whatever it answers (a server that cannot cancel has nothing left to say to us).
   * Any instance may; null when the task had ended already. `trace`: the trace context of the
   * span the cancel was asked under, carried by the `tasks/cancel`.
   */
  async cancel(row: TaskRow, trace?: Record<string, string>): Promise<TaskRow | null> {
    await this.cancelUpstream(row, trace);
    const finished = await this.deps.store.finish(row.id, null, {
      state: TaskStates.cancelled,
      statusMessage: 'cancelled by the caller',
      result: encodePayload(cancelledOutcome(row)),
      error: { code: ErrorCodes.cancelled, message: 'the task was cancelled' },
    });
    if (finished !== null) this.deps.close(finished, ErrorCodes.cancelled);
    return finished;
  }

  /** An expired task's `tasks/cancel`, under a `proxy.task.expire` span of its own (the sweep answers no caller). */
  private async cancelExpired(row: TaskRow): Promise<void> {
    const span = this.deps.tracer.startSpan(
      'proxy.task.expire',
      { kind: SpanKind.CLIENT, attributes: taskSpanAttributes(row, 'tasks/cancel') },
      ROOT_CONTEXT,
    );
    const code = await this.cancelUpstream(row, traceCarrier(trace.setSpan(ROOT_CONTEXT, span)));
    endWithOutcome(span, code);
  }

  /** Asks the task's server to cancel it: undefined when it accepted, else the refusal's code (logged; the task ends all the same). */
  private async cancelUpstream(row: TaskRow, trace?: Record<string, string>): Promise<string | undefined> {
    try {
      const target = await this.deps.target(row);
      await taskRequest(
        target,
        'tasks/cancel',
        { taskId: row.upstream_task_id },
        { timeoutMs: CANCEL_TIMEOUT_MS, ...(trace !== undefined ? { trace } : {}) },
      );
      return undefined;
    } catch (err) {
      const { code } = toWire(err);
      this.deps.log.info('tasks/cancel was not accepted upstream', { task: row.id, code });
      return code;
    }
  }
}

function cancelledOutcome(row: TaskRow): StoredOutcome {
  return {
    ok: false,
    error: { code: ErrorCodes.cancelled, message: 'the task was cancelled', details: { task: row.id } },
  };
}
