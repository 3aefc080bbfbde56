import {
  ErrorCodes,
  TASK_ID_RE,
  TASK_LIST_MAX,
  TaskStates,
  invalidInput,
  isFinalTaskState,
  type TaskView,
} from '@mcpx/contracts';
import { TaskClient } from '@mcpx/proxy-client';
import { auditBy, recordAudit } from '../audit/audit-log.js';
import { findAgent } from './agents.actions.js';
import type { AgentsAction, AgentsDeps } from './agents-deps.js';

/**
 * Brokered tasks for people (docs/tasks.md#people): the signer's account's tasks, asked of the
 * proxy's task service (`mcp.proxy.tasks`, any instance answers from the rows) with the
 * registry's NATS user, for the signer's own account only: a task of another account is
 * `not_found`, as one that never was. Tasks are shown, never their results (those go to the
 * caller that made the call). A cancel is the signer's act and is audited as one.
 */

const clients = new WeakMap<AgentsDeps['bus'], TaskClient>();

/** The task service's client over the registry's bus (one per bus). */
function tasksOf(deps: AgentsDeps): TaskClient {
  let client = clients.get(deps.bus);
  if (client === undefined) clients.set(deps.bus, (client = new TaskClient(deps.bus.nc, deps.bus.subjects)));
  return client;
}

function taskField(value: unknown): string {
  if (typeof value !== 'string' || !TASK_ID_RE.test(value))
    throw invalidInput('task', 'must be a task id (tsk_ and 24 letters or digits)');
  return value;
}

/** `ListTasks {agent?, limit?}` → `{tasks}`: newest first; `agent` by id or name (an unknown one is `not_found`). */
export const listTasks: AgentsAction<'ListTasks'> = async (deps, caller, action) => {
  const limit = action.limit ?? undefined;
  if (
    limit !== undefined &&
    (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > TASK_LIST_MAX)
  )
    throw invalidInput('limit', `must be an integer from 1 to ${TASK_LIST_MAX}`);
  const agent =
    action.agent === undefined || action.agent === null
      ? undefined
      : (await findAgent(deps, caller.account, action.agent)).id;
  const tasks = await tasksOf(deps).listTasks(caller.account, {
    ...(agent !== undefined ? { agent } : {}),
    ...(limit !== undefined ? { limit } : {}),
  });
  return { tasks };
};

/** `GetTask {task}` → `{task}`. */
export const getTask: AgentsAction<'GetTask'> = async (deps, caller, action) => ({
  task: await tasksOf(deps).getTask(caller.account, taskField(action.task)),
});

/**
 * `GetTaskResult {task}` → `{result, taskId}`: the result the broker kept, flattened and bounded
 * as a call's when it was fetched; a task that failed, was cancelled or expired throws the typed
 * error it ended with, an open one `conflict`, one whose result went with its ttl `not_found`.
 */
export const getTaskResult: AgentsAction<'GetTaskResult'> = async (deps, caller, action) => {
  const taskId = taskField(action.task);
  return { result: await tasksOf(deps).taskResult(caller.account, taskId), taskId };
};

/** What the audit log keeps of a task: where it runs and how it stands, never its arguments or result. */
function auditTask(t: TaskView): Record<string, unknown> {
  return {
    state: t.state,
    agent: t.agent,
    server: t.server,
    tool: t.tool,
    run: t.run,
    ...(t.error !== undefined ? { error: t.error.code } : {}),
  };
}

/** Raised in the cancel's transaction when the task ended otherwise before the cancel reached it: rolls the entry back. */
class EndedMeanwhile extends Error {
  constructor(readonly task: TaskView) {
    super('the task ended before it was cancelled');
  }
}

/**
 * `CancelTask {task}` → `{task}`: the server is asked to cancel it and the task ends `cancelled`;
 * a task that had ended is answered as it stands, and nothing is recorded. The cancel is
 * recorded in the audit log with the signer.
 *
 * The task lives in the proxy's task service, out of reach of the registry's transactions: the
 * entry (the task as it stood, and as a cancel leaves it) is written first, in a transaction that
 * commits only once the task service answers the task `cancelled`. Postgres lost at the entry
 * cancels nothing (the service is never asked); a task that ended otherwise meanwhile (the
 * service answers it as it stands) or a refused cancel rolls the entry back. Lost at the commit
 * itself, the cancel stands without its entry.
 */
export const cancelTask: AgentsAction<'CancelTask'> = async (deps, caller, action) => {
  const id = taskField(action.task);
  const tasks = tasksOf(deps);
  const before = await tasks.getTask(caller.account, id);
  if (isFinalTaskState(before.state)) return { task: before };
  try {
    const task = await deps.heldEntries.transaction(deps.db, caller.account, async (trx) => {
      await recordAudit(trx, {
        ...auditBy(caller),
        action: 'CancelTask',
        target: { kind: 'task', name: id },
        before: auditTask(before),
        after: { ...auditTask(before), state: TaskStates.cancelled, error: ErrorCodes.cancelled },
      });
      const task = await tasks.cancelTask(caller.account, id);
      if (task.state !== TaskStates.cancelled) throw new EndedMeanwhile(task);
      return task;
    });
    return { task };
  } catch (err) {
    if (err instanceof EndedMeanwhile) return { task: err.task };
    throw err;
  }
};
