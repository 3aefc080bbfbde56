import {
  ErrorCodes,
  TaskStates,
  WireError,
  type InputRequestItem,
  type TaskQuestionsView,
  type TaskView,
} from '@mcpx/contracts';
import type { TaskClient } from '@mcpx/proxy-client';
import type { TaskHandle } from '@mcpx/domain';
import { Server, type CallToolResult } from '@modelcontextprotocol/server';

/**
 * Tasks as the endpoint's clients see them (docs/endpoint.md#tasks), in the two dialects:
 * - 2025-11-25: the `tasks` capability, a tool's `execution.taskSupport`, a call asking with
 *   `params.task`, answered `{task: {taskId, status, ttl, pollInterval, …}}`; `tasks/get`,
 *   `tasks/result`, `tasks/list`, `tasks/cancel`.
 * - 2026-07-28: the tasks extension `io.modelcontextprotocol/tasks` (SEP-2663): a call whose
 *   `_meta` client capabilities declare it may be answered `{resultType: 'task', taskId, status,
 *   ttlMs, pollIntervalMs, …}`; `tasks/get` carries the result or the error inline; `tasks/update`,
 *   `tasks/cancel`; no `tasks/list` and no `tasks/result`.
 * The task's id is the connector's (`tsk_…`), never the server's.
 */
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';

/** `_meta` key (2025-11-25) tying a `tasks/result` answer to its task. */
export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';

/** `_meta` key of a `tools/call` that waits for a task an earlier call of the same tool left running (clients without tasks). */
export const META_TASK_ID = 'io.mcpx/taskId';

/** Which dialect a request speaks. */
export type TaskEra = 'legacy' | 'modern';

/**
 * How often the endpoint asks its clients to poll. The task's row is read, never its server: the
 * broker polls the server at the server's own pace, once for every reader.
 */
export const CLIENT_POLL_INTERVAL_MS = 1_000;

/** The endpoint's server capabilities for tasks: the 2025 `tasks` capability and the 2026 extension (the SDK drops each where its era has none). */
export const TASK_CAPABILITIES = {
  tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
  extensions: { [TASKS_EXTENSION_ID]: {} },
};

/** Whether a 2026-07-28 request's declared client capabilities include the tasks extension. */
export function declaresTasksExtension(capabilities: unknown): boolean {
  const ext = (capabilities as { extensions?: unknown } | null | undefined)?.extensions;
  if (ext === null || typeof ext !== 'object' || Array.isArray(ext)) return false;
  const v = (ext as Record<string, unknown>)[TASKS_EXTENSION_ID];
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Whether a 2025-11-25 `tools/call`'s params ask for a task (`task: {ttl?}`). */
export function asksForTask(params: unknown): boolean {
  const task = (params as { task?: unknown } | null | undefined)?.task;
  return task !== null && typeof task === 'object' && !Array.isArray(task);
}

/** One question as MCP sends it (`elicitation/create`, `sampling/createMessage`, `roots/list`); a URL one is a person's. */
export function wireInputRequest(q: InputRequestItem): { method: string; params: Record<string, unknown> } | undefined {
  if (q.kind === 'form')
    return {
      method: 'elicitation/create',
      params: { mode: 'form', message: q.message, requestedSchema: q.requestedSchema },
    };
  if (q.kind === 'sampling') return { method: 'sampling/createMessage', params: q.params };
  if (q.kind === 'roots') return { method: 'roots/list', params: {} };
  return undefined;
}

/** A task's round as its client is asked it: the questions addressed to the client still unanswered, by key. */
export function clientQuestions(
  round: TaskQuestionsView | undefined,
): Record<string, { method: string; params: Record<string, unknown> }> {
  const out: Record<string, { method: string; params: Record<string, unknown> }> = {};
  for (const q of round?.requests ?? []) {
    if (q.answerBy !== 'runtime' || round!.answered.includes(q.key)) continue;
    const wire = wireInputRequest(q);
    if (wire !== undefined) out[q.key] = wire;
  }
  return out;
}

/** The status message of a task that asks its client (2025: take the questions with `tasks/result`; 2026-07-28: answer with `tasks/update`). */
export const ASKING_CLIENT = 'the server asks a question of this client';

/** The round a task asks its client: the round's id and its questions of the client, by key. */
export interface ClientRound {
  inputRequestId: string;
  inputRequests: ReturnType<typeof clientQuestions>;
}

/**
 * The round a task asks its client (the questions its call declared the client answers: forms
 * when it declared elicitation, sampling, roots), unanswered ones only; undefined when it asks
 * the client nothing now (it works, or only the account owner is asked).
 */
export async function askingClient(
  tasks: Pick<TaskClient, 'taskQuestions'>,
  account: string,
  view: TaskView,
): Promise<ClientRound | undefined> {
  if (view.state !== TaskStates.inputRequired || view.inputRequestId === undefined) return undefined;
  const round = await tasks.taskQuestions(account, view.id).catch((err: unknown) => {
    // The round ended between the two reads (answered, expired): nothing to ask.
    if (err instanceof WireError && err.code === ErrorCodes.conflict) return undefined;
    throw err;
  });
  const inputRequests = clientQuestions(round);
  if (round === undefined || Object.keys(inputRequests).length === 0) return undefined;
  return { inputRequestId: round.inputRequestId, inputRequests };
}

/**
 * A task as a 2025-11-25 client is shown it (`tasks/get`, `notifications/tasks/status`): as
 * {@link wireTask}, but `input_required` while it asks this client (`asking`), which then takes
 * the questions with `tasks/result`, as the 2025-11-25 tasks say.
 */
export function legacyWireTask(view: TaskView, asking: ClientRound | undefined): Record<string, unknown> {
  const task = wireTask(view, 'legacy');
  return asking === undefined ? task : { ...task, status: 'input_required', statusMessage: ASKING_CLIENT };
}

/**
 * The state a client is shown: the connector's `expired` is a `failed` task to MCP, and an
 * `input_required` one shows `working` unless it asks the client itself (then `tasks/get`
 * says `input_required` with the questions): a question for the account owner is nothing the
 * client could answer.
 */
export function clientStatus(view: TaskView): 'working' | 'completed' | 'failed' | 'cancelled' {
  switch (view.state) {
    case TaskStates.completed:
      return 'completed';
    case TaskStates.cancelled:
      return 'cancelled';
    case TaskStates.failed:
    case TaskStates.expired:
      return 'failed';
    case TaskStates.working:
    case TaskStates.inputRequired:
      return 'working';
  }
}

/** The status text a client is shown: the server's, or why the connector ended the task. */
function statusMessageOf(view: TaskView): string | undefined {
  if (view.state === TaskStates.inputRequired) {
    const id = view.inputRequestId === undefined ? '' : ` (input request ${view.inputRequestId})`;
    return `waiting for the account owner to answer the server's question${id}`;
  }
  if (view.error !== undefined && (view.state === TaskStates.failed || view.state === TaskStates.expired))
    return `${view.error.code}: ${view.error.message}`.slice(0, 1_024);
  return view.statusMessage;
}

/** How long the task is kept from its creation (its expiry is the connector's, at most `TASK_MAX_TTL_MS`). */
function ttlOf(view: TaskView): number {
  return Math.max(0, Date.parse(view.expiresAt) - Date.parse(view.createdAt));
}

/** A task in a dialect's words, without a result: `tasks/get`'s and `tasks/list`'s items, a creation's body. */
export function wireTask(view: TaskView, era: TaskEra): Record<string, unknown> {
  const message = statusMessageOf(view);
  const common = {
    taskId: view.id,
    status: clientStatus(view),
    ...(message !== undefined ? { statusMessage: message } : {}),
    createdAt: view.createdAt,
    lastUpdatedAt: view.updatedAt,
  };
  return era === 'modern'
    ? { ...common, ttlMs: ttlOf(view), pollIntervalMs: CLIENT_POLL_INTERVAL_MS }
    : { ...common, ttl: ttlOf(view), pollInterval: CLIENT_POLL_INTERVAL_MS };
}

/** Results the handler made as created tasks: the SDK's tools/call check is not for them ({@link TaskAwareServer}). */
const createdTasks = new WeakSet<object>();

/** A `tools/call` answer that creates a task, in the request's dialect. */
export function createTaskResult(view: TaskView, era: TaskEra): CallToolResult {
  const body = era === 'modern' ? { resultType: 'task', ...wireTask(view, era) } : { task: wireTask(view, era) };
  createdTasks.add(body);
  // Not a CallToolResult: the tools/call handler hands it back as one, TaskAwareServer writes it as it is.
  return body as unknown as CallToolResult;
}

/** Whether a call's answer is a created task made by {@link createTaskResult} (written as it is). */
export function isCreatedTask(result: object): boolean {
  return createdTasks.has(result);
}

/**
 * The endpoint's per-request MCP server, which may answer `tools/call` with a created task. The
 * SDK checks a `tools/call` result against its era's CallToolResult, which a 2025 CreateTaskResult
 * (`{task}`, no `content`) is not: a result made by {@link createTaskResult} passes that check
 * with an empty placeholder and goes out as it was made. Every other result is checked as before.
 */
export class TaskAwareServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: Parameters<Server['_wrapHandler']>[1],
  ): ReturnType<Server['_wrapHandler']> {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    return async (request, ctx) => {
      let created: object | undefined;
      const checked = super._wrapHandler(method, async (req, c) => {
        const out = await handler(req, c);
        if (!createdTasks.has(out)) return out;
        created = out;
        return { content: [] };
      });
      const result = await checked(request, ctx);
      return (created as typeof result | undefined) ?? result;
    };
  }
}

/** The result of a call whose task still runs, for a client that asked for no task: what it is and how to take its result. */
export function runningResult(tool: string, handle: TaskHandle): CallToolResult {
  const status = handle.statusMessage ? `${handle.state}: ${handle.statusMessage}` : handle.state;
  return {
    content: [
      {
        type: 'text',
        text:
          `${tool} is still running as task ${handle.id} (${status}); it goes on after this answer. ` +
          `To wait for its result, call ${tool} again with the same arguments and _meta {"${META_TASK_ID}": "${handle.id}"}, ` +
          `or ask tasks/result (MCP tasks) for taskId ${handle.id} on this endpoint with this token.`,
      },
    ],
    _meta: {
      'io.mcpx/task': {
        id: handle.id,
        state: handle.state,
        ...(handle.statusMessage !== undefined ? { statusMessage: handle.statusMessage } : {}),
      },
    },
  };
}
