import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import {
  flattenCallResult,
  isErrorResult,
  TaskSupport,
  type FlattenLimits,
  type McpToolDocument,
  type ProxyResult,
} from '@mcpx/domain';
import { TaskDialect, createdTaskOf, type TaskWireTarget } from '@mcpx/mcp-client';
import { structuredFault } from '../whole-result.js';
import { readOutcome, type StoredOutcome, type TaskBroker } from './task-broker.js';
import { TOOL_ERROR } from './task-outcome.js';
import type { TaskRow, TaskStore } from './task-store.js';

export { newTaskId } from './task-store.js';

/** The pool run a task-augmented call goes out on: a legacy task lives in its session, which must outlive the caller's run. */
export function taskRun(taskId: string): string {
  return `task-${taskId}`;
}

export interface TaskCallsDeps {
  broker: TaskBroker;
  store: TaskStore;
  /** Open tasks per account at most (`QUOTA_RUNNING_TASKS_PER_ACCOUNT`; 0: no cap). */
  maxRunningPerAccount: number;
  /** The call reply's bounds: a task's result is bounded as a call's. */
  flatten?: Partial<FlattenLimits>;
  resultBytes?: number;
  /**
   * Lets a task's pool run go (the pool's `endRun`) once the task is recorded, so an open task
   * holds no run or connection slot: its polls are plain requests (on the instance's shared HTTP
   * connections). A modern task holds no session; a 2025 task lives in its session, which is
   * kept (`keepSessions`: closed without a DELETE) and ended when the task ends.
   */
  releaseRun?: (account: string, run: string, opts?: { keepSessions?: boolean }) => void;
}

/** What the call path knows when its task-augmented call came back. */
export interface BrokeredCall {
  req: ProxyCallRequest;
  doc: McpToolDocument;
  taskId: string;
  result: unknown;
  era: 'modern' | 'legacy';
  target: TaskWireTarget | undefined;
  authContext: string;
  /** The agent lets its runtime answer forms (`inputs.forms: "runtime"`). */
  formsByRuntime: boolean;
  /** performance.now() at the call's arrival. */
  started: number;
  /** What is left of the call bound. */
  remainingMs: number;
}

/**
 * The call path's side of brokered tasks (docs/tasks.md): which calls go out task-augmented, the
 * running-tasks quota, and a created task handed to the broker, answered with its result when it
 * ends within the call bound, else with its handle.
 */
export class TaskCalls {
  constructor(private readonly deps: TaskCallsDeps) {}

  get maxTtlMs(): number {
    return this.deps.broker.maxTtlMs;
  }

  /** A `required` tool's call always; an `optional` one's when the caller asks (`task: true`). */
  wanted(doc: McpToolDocument, req: ProxyCallRequest): boolean {
    return doc.taskSupport === TaskSupport.required || (doc.taskSupport === TaskSupport.optional && req.task === true);
  }

  /** Refuses a new task past the account's cap, before anything is sent. */
  async admit(account: string): Promise<void> {
    const max = this.deps.maxRunningPerAccount;
    if (max <= 0) return;
    const open = await this.deps.store.countOpen(account);
    if (open >= max)
      throw new WireError(
        ErrorCodes.quotaExceeded,
        `this account has ${open} tasks running, the most it may (QUOTA_RUNNING_TASKS_PER_ACCOUNT)`,
        { limit: 'running_tasks_per_account', max },
      );
  }

  /**
   * The task a call created, recorded and waited for: its result when it ends within what is left
   * of the call bound, else its handle. Undefined when the server answered the call itself.
   */
  async brokered(c: BrokeredCall): Promise<ProxyResult | undefined> {
    const created = createdTaskOf(c.result, c.era);
    if (created === undefined) return undefined;
    if (c.target === undefined)
      throw new WireError(
        ErrorCodes.transportError,
        'the server made the call a task on a connection the connector cannot poll tasks on (legacy SSE)',
        { server: c.doc.server },
      );
    const row = await this.deps.broker.adopt(
      {
        id: c.taskId,
        account: c.req.account,
        agent: c.req.agent,
        run: c.req.run,
        server: c.doc.server,
        tool: c.doc.name,
        remoteName: c.doc.remoteName,
        upstreamTaskId: created.taskId,
        dialect: c.era === 'modern' ? TaskDialect.modern : TaskDialect.legacy,
        protocolVersion: c.target.protocolVersion,
        ...(c.target.sessionId !== undefined ? { sessionId: c.target.sessionId } : {}),
        authContext: c.authContext,
        // The caller answers its task's questions only when it said it does (it waits with an answer handler, or polls).
        ...(c.req.answers?.tasks === true
          ? { answerers: { ...c.req.answers, ...(c.formsByRuntime ? { formsByRuntime: true } : {}) } }
          : {}),
      },
      created,
      c.target,
    );
    this.deps.releaseRun?.(c.req.account, taskRun(c.taskId), c.era === 'legacy' ? { keepSessions: true } : undefined);
    const ended = await this.deps.broker.waitEnded(c.taskId, c.remainingMs);
    if (ended !== null && ended.result_cbor !== null) {
      await this.deps.store.taken(c.req.account, c.taskId);
      const outcome = readOutcome(ended.result_cbor);
      if (!outcome.ok) throw WireError.from(outcome.error);
      return outcome.result;
    }
    // Not waited for (`taskWaitMs: 0`): the row as written is the task as it stands.
    const now = ended ?? (c.remainingMs > 0 ? await this.deps.store.get(c.req.account, c.taskId) : null) ?? row;
    return handleResult(c.doc, now, c.taskId, Math.round(performance.now() - c.started));
  }

  /**
   * A completed task's result as its call would have answered (the tool's `isError` is
   * `server_error`, marked `reason: tool_error`: the task still completed), bounded as a call's.
   */
  shape(row: TaskRow, result: Record<string, unknown>, durationMs: number): StoredOutcome {
    const errorText = isErrorResult(result);
    if (errorText !== undefined)
      return {
        ok: false,
        error: {
          code: ErrorCodes.serverError,
          message: errorText || `${row.tool} reported an error`,
          details: { server: row.server, task: row.id, reason: TOOL_ERROR },
        },
      };
    const flat = flattenCallResult(
      { tool: row.tool, server: row.server, remoteName: row.remote_name, arguments: {}, result, durationMs },
      this.deps.flatten,
    );
    const fault = structuredFault(flat.result, this.deps.resultBytes);
    if (fault !== undefined) {
      delete flat.result;
      flat.text = flat.text === undefined ? fault.text : `${flat.text}\n${fault.text}`;
    }
    return { ok: true, result: flat };
  }
}

/** The answer of a call whose task outlived the call bound: the handle, and a line that says how to go on. */
function handleResult(doc: McpToolDocument, row: TaskRow | null, id: string, durationMs: number): ProxyResult {
  const state = row?.state ?? 'working';
  const statusMessage = row?.status_message ?? undefined;
  return {
    summary: `${doc.name} · task ${id} (${state})`,
    text: `${doc.name} is running as task ${id} (${state}${statusMessage ? `: ${statusMessage}` : ''}). Wait for it with waitTask, or take its result with taskResult once it has ended.`,
    task: { id, state, ...(statusMessage !== undefined ? { statusMessage } : {}) },
    durationMs,
  };
}
