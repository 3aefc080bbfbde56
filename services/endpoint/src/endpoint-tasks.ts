import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Counter, type Tracer } from '@opentelemetry/api';
import {
  ENDPOINT_RUN_PREFIX,
  ErrorCodes,
  TASK_ID_RE,
  TASK_LIST_MAX,
  WireError,
  isFinalTaskState,
  toWireError,
  type TaskView,
} from '@mcpx/contracts';
import type { TaskHandle } from '@mcpx/domain';
import type { TaskClient, TaskWait } from '@mcpx/proxy-client';
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type Server,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TokenGrant } from './agent-tokens.js';
import { callToolResult, errorResult } from './call-result.js';
import {
  ASKING_CLIENT,
  RELATED_TASK_META_KEY,
  TASKS_EXTENSION_ID,
  askingClient,
  legacyWireTask,
  createTaskResult,
  declaresTasksExtension,
  META_TASK_ID,
  runningResult,
  wireTask,
  type TaskEra,
} from './task-wire.js';

/** Asks a task's client its round's questions (its own, unanswered) and gives their answers by key. */
export type TaskAnswerer = NonNullable<TaskWait['answer']>;

/** SEP-2575's MissingRequiredClientCapability: a request that needs a capability its client did not declare. */
const MISSING_CLIENT_CAPABILITY = -32021;

/** A `tasks/result` (and a resumed call) waits this long for its task, then says it still runs. */
const RESULT_WAIT_MS = 110_000;

export interface EndpointTasksDeps {
  /** `mcp.proxy.tasks`: the broker's rows, read by any proxy instance. */
  tasks: TaskClient;
  tracer: Tracer;
  /** The endpoint's request counter (`mcpx_endpoint_requests_total{method,outcome}`). */
  requests: Counter;
}

const taskIdParams = { params: z.object({ taskId: z.string().max(256) }).passthrough() };
const listParams = { params: z.object({ cursor: z.string().max(256).optional() }).passthrough() };
const updateParams = {
  params: z
    .object({ taskId: z.string().max(256), inputResponses: z.record(z.string(), z.unknown()).optional() })
    .passthrough(),
};

/** The answer of every task a token does not hold: the same as a task that never was. */
const notFound = (): ProtocolError => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Task not found');

/**
 * The endpoint's side of brokered tasks (docs/endpoint.md#tasks): a call of a task tool by a
 * client that asked for a task answers at once with the created task; its `tasks/*` requests
 * are answered from the proxy's task service (`mcp.proxy.tasks`), for the tasks made by the
 * request's own token only (the run `ep-<token id>` of the row): another token's task, of the
 * same agent or not, is "Task not found", as one that never was. A client that asked for none
 * is answered as a runtime is: the result within the call bound, else a result naming the task.
 * A span (`endpoint.tasks/<verb>`) and the endpoint's request count per request.
 */
export class EndpointTasks {
  constructor(private readonly deps: EndpointTasksDeps) {}

  /** Registers `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` and `tasks/update` on a request's server (the SDK keeps each to its era). */
  register(server: Server, grant: TokenGrant): void {
    // A 2026-07-28 request's era, checked for the extension: one whose client did not declare it is
    // refused as SEP-2575 says (MissingRequiredClientCapability), before any task is looked at.
    const era = (): TaskEra => {
      if ((server.getNegotiatedProtocolVersion() ?? '') < '2026-07-28') return 'legacy';
      if (!declaresTasksExtension(server.getClientCapabilities()))
        throw new MissingRequiredClientCapabilityError(
          { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } },
          `this request does not declare the ${TASKS_EXTENSION_ID} extension`,
        );
      return 'modern';
    };
    server.setRequestHandler('tasks/get', taskIdParams, (params) =>
      this.traced('tasks/get', grant, (tasks) => this.get(tasks, grant, params.taskId, era())),
    );
    server.setRequestHandler('tasks/result', taskIdParams, (params, ctx) =>
      this.traced('tasks/result', grant, (tasks) => this.result(tasks, grant, params.taskId, ctx.mcpReq.signal)),
    );
    server.setRequestHandler('tasks/list', listParams, () =>
      this.traced('tasks/list', grant, (tasks) => this.list(tasks, grant)),
    );
    server.setRequestHandler('tasks/cancel', taskIdParams, (params) =>
      this.traced('tasks/cancel', grant, (tasks) => this.cancel(tasks, grant, params.taskId, era())),
    );
    // The SDK lifts a request's `inputResponses` out of its params (SEP-2322) onto the request context.
    server.setRequestHandler('tasks/update', updateParams, (params, ctx) =>
      this.traced(
        'tasks/update',
        grant,
        (tasks) => (
          era(),
          this.update(tasks, grant, params.taskId, params.inputResponses ?? inputResponsesOf(ctx.mcpReq))
        ),
      ),
    );
  }

  /**
   * The answer of a call that became a task: to a client that asked for one, the created task in
   * its dialect; to any other, a result that names the task and how to take its result.
   */
  async answer(
    grant: TokenGrant,
    tool: string,
    handle: TaskHandle,
    asked: TaskEra | undefined,
  ): Promise<CallToolResult> {
    if (asked !== undefined) {
      const view = await this.deps.tasks.getTask(grant.account, handle.id).catch(() => undefined);
      if (view !== undefined) return createTaskResult(view, asked);
    }
    return runningResult(tool, handle);
  }

  /** The task id of a call's `_meta["io.mcpx/taskId"]`, when it names one. */
  resumed(meta: Record<string, unknown> | undefined): string | undefined {
    const id = meta?.[META_TASK_ID];
    return typeof id === 'string' && TASK_ID_RE.test(id) ? id : undefined;
  }

  /**
   * A call re-sent with `_meta["io.mcpx/taskId"]` by a client without tasks: it waits for that
   * task (its token's, of this tool) within the call bound and answers its result, or again that
   * it runs. A task of another token, or of another tool, is refused as unknown.
   */
  async resume(grant: TokenGrant, tool: string, id: string, signal: AbortSignal): Promise<CallToolResult> {
    let view: TaskView;
    try {
      view = await this.own(this.deps.tasks, grant, id);
    } catch (err) {
      if (err instanceof ProtocolError)
        return errorResult(
          new WireError(ErrorCodes.notFound, `${META_TASK_ID}: this token has no task ${id}`, { field: META_TASK_ID }),
        );
      throw err;
    }
    if (view.tool !== tool)
      return errorResult(
        new WireError(
          ErrorCodes.invalidInput,
          `${META_TASK_ID}: task ${id} is a call of ${view.tool}, not of ${tool}`,
          { field: META_TASK_ID },
        ),
      );
    const ended = isFinalTaskState(view.state)
      ? view
      : await this.deps.tasks.waitTask(grant.account, id, { timeoutMs: RESULT_WAIT_MS, signal });
    if (!isFinalTaskState(ended.state))
      return runningResult(tool, {
        id,
        state: ended.state,
        ...(ended.statusMessage !== undefined ? { statusMessage: ended.statusMessage } : {}),
      });
    return await this.outcome(this.deps.tasks, grant, ended);
  }

  /**
   * One task request: its span, its count, a fault of the connector's as an internal error (a
   * refusal as the client's). `run` asks the proxy with a client whose requests carry the span's
   * context (passed by hand: docs/operations.md#trace-context), so the proxy's task span is its child.
   */
  private async traced<T>(method: string, grant: TokenGrant, run: (tasks: TaskClient) => Promise<T>): Promise<T> {
    const span = this.deps.tracer.startSpan(`endpoint.${method}`, {
      kind: SpanKind.SERVER,
      attributes: { 'mcpx.account': grant.account, 'mcpx.agent': grant.agent },
    });
    let outcome = 'ok';
    try {
      return await run(this.clientUnder(span));
    } catch (err) {
      const e = err instanceof ProtocolError ? err : protocolErrorOf(err);
      outcome =
        e.code === (ProtocolErrorCode.InvalidParams as number)
          ? 'refused'
          : e.code === MISSING_CLIENT_CAPABILITY
            ? 'undeclared'
            : 'error';
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
      throw e;
    } finally {
      span.setAttribute('mcpx.outcome', outcome);
      span.end();
      this.deps.requests.add(1, { method, outcome });
    }
  }

  /**
   * The task client whose requests carry `span`'s context, passed by hand (the endpoint's context
   * does not follow awaits: docs/operations.md#trace-context): the proxy's task span is its child.
   */
  clientUnder(span: ReturnType<Tracer['startSpan']>): TaskClient {
    return this.deps.tasks.withTrace(trace.setSpan(ROOT_CONTEXT, span));
  }

  /** The task, when the request's token made it; "Task not found" otherwise (another token's, another account's, none). */
  private async own(tasks: TaskClient, grant: TokenGrant, id: string): Promise<TaskView> {
    if (!TASK_ID_RE.test(id)) throw notFound();
    let view: TaskView;
    try {
      view = await tasks.getTask(grant.account, id);
    } catch (err) {
      if (err instanceof WireError && err.code === ErrorCodes.notFound) throw notFound();
      throw err;
    }
    if (view.run !== `${ENDPOINT_RUN_PREFIX}${grant.id}` || view.agent !== grant.agent) throw notFound();
    return view;
  }

  /**
   * The task of `id` when the token made it (on a per-server face, of that server), else
   * undefined: what a listen's `taskIds` may name (task-listen.ts). `tasks`: what asks the proxy.
   */
  async owned(
    grant: TokenGrant,
    id: string,
    face: string | undefined,
    tasks: TaskClient = this.deps.tasks,
  ): Promise<TaskView | undefined> {
    try {
      const view = await this.own(tasks, grant, id);
      return face === undefined || view.server === face ? view : undefined;
    } catch (err) {
      if (err instanceof ProtocolError) return undefined;
      throw err;
    }
  }

  private async get(tasks: TaskClient, grant: TokenGrant, id: string, era: TaskEra): Promise<Record<string, unknown>> {
    const view = await this.own(tasks, grant, id);
    if (era === 'modern') return await this.detailed(grant, view, tasks);
    // A 2025 client asked its task's questions (its call declared it answers them) takes them with tasks/result.
    return legacyWireTask(view, await askingClient(tasks, grant.account, view));
  }

  /**
   * A task as a 2026-07-28 `tasks/get` shows it (SEP-2663's DetailedTask): its questions of this
   * client when it asks any, the result or the error inline once it ended. Also the params of a
   * `notifications/tasks` on a listen (task-listen.ts). `tasks`: what asks the proxy.
   */
  async detailed(
    grant: TokenGrant,
    view: TaskView,
    tasks: TaskClient = this.deps.tasks,
  ): Promise<Record<string, unknown>> {
    const task = wireTask(view, 'modern');
    // A 2026-07-28 client that asked for the task is asked its questions here (a 2025 one's go to the owner).
    const asking = await askingClient(tasks, grant.account, view);
    if (asking !== undefined)
      return { ...task, status: 'input_required', statusMessage: ASKING_CLIENT, inputRequests: asking.inputRequests };
    if (!isFinalTaskState(view.state) || view.state === 'cancelled') return task;
    // 2026-07-28: a completed task carries its result, a failed one its error, inline.
    if (view.state === 'completed') return { ...task, result: await this.outcome(tasks, grant, view) };
    return {
      ...task,
      error: {
        code: ProtocolErrorCode.InternalError,
        message: view.error?.message ?? 'the task failed',
        data: { code: view.error?.code ?? ErrorCodes.serverError },
      },
    };
  }

  /**
   * 2025-11-25 `tasks/result` on the lean path (lean-calls.ts): as {@link result}, the task's
   * questions of this client asked with `answer` meanwhile, each round's answers handed to the task.
   */
  legacyResult(grant: TokenGrant, id: string, signal: AbortSignal, answer: TaskAnswerer): Promise<CallToolResult> {
    return this.traced('tasks/result', grant, (tasks) => this.result(tasks, grant, id, signal, answer));
  }

  /** 2025-11-25 `tasks/result`: waits for the task to end (bounded), then its result as the call would have answered. */
  private async result(
    tasks: TaskClient,
    grant: TokenGrant,
    id: string,
    signal: AbortSignal,
    answer?: TaskAnswerer,
  ): Promise<CallToolResult> {
    const view = await this.own(tasks, grant, id);
    const ended = isFinalTaskState(view.state)
      ? view
      : await tasks.waitTask(grant.account, id, {
          timeoutMs: RESULT_WAIT_MS,
          signal,
          ...(answer !== undefined ? { answer } : {}),
        });
    if (!isFinalTaskState(ended.state))
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `task ${id} is still ${ended.state}: ask again, or poll tasks/get`,
        { code: ErrorCodes.timeout, taskId: id },
      );
    const result = await this.outcome(tasks, grant, ended);
    return { ...result, _meta: { ...(result._meta ?? {}), [RELATED_TASK_META_KEY]: { taskId: id } } };
  }

  /**
   * An ended task's result as a tool result: the result, or the typed error it ended with
   * (`isError`, as every failed call is). The task's stored error names the task in its details,
   * which tells it from a fault on the way (the proxy not answering), thrown as the connector's.
   */
  private async outcome(tasks: TaskClient, grant: TokenGrant, view: TaskView): Promise<CallToolResult> {
    try {
      return callToolResult(await tasks.taskResult(grant.account, view.id));
    } catch (err) {
      if (!(err instanceof WireError)) throw err;
      if (err.details.task === view.id) return errorResult(err);
      throw err;
    }
  }

  /** 2025-11-25 `tasks/list`: the token's tasks among its agent's latest, newest first, in one page. */
  private async list(tasks: TaskClient, grant: TokenGrant): Promise<{ tasks: Array<Record<string, unknown>> }> {
    const all = await tasks.listTasks(grant.account, { agent: grant.agent, limit: TASK_LIST_MAX });
    const run = `${ENDPOINT_RUN_PREFIX}${grant.id}`;
    return { tasks: all.filter((t) => t.run === run).map((t) => wireTask(t, 'legacy')) };
  }

  private async cancel(
    tasks: TaskClient,
    grant: TokenGrant,
    id: string,
    era: TaskEra,
  ): Promise<Record<string, unknown>> {
    const view = await this.own(tasks, grant, id);
    // 2026-07-28 acknowledges the cancel of an ended task as it does any (idempotent); 2025 refuses it.
    if (isFinalTaskState(view.state)) {
      if (era === 'modern') return {};
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Cannot cancel task: already ${view.state}`);
    }
    const ended = await tasks.cancelTask(grant.account, id);
    return era === 'modern' ? {} : wireTask(ended, 'legacy');
  }

  /**
   * 2026-07-28 `tasks/update`: the client's answers to the questions its task asked it, by key,
   * kept until all of the round's are in (the task then goes on upstream), and acknowledged
   * with an empty result. Answers to questions the task does not ask the client are ignored, as
   * SEP-2663 says; an answer that does not fit its question is `-32602` naming it.
   */
  private async update(
    tasks: TaskClient,
    grant: TokenGrant,
    id: string,
    inputResponses: Record<string, unknown> | undefined,
  ): Promise<Record<string, unknown>> {
    const view = await this.own(tasks, grant, id);
    // The round a task asks this client, unanswered questions only.
    const asking = await askingClient(tasks, grant.account, view);
    // Answers to questions not asked of this client (now) are ignored, as SEP-2663 says.
    const answers = Object.fromEntries(
      Object.entries(inputResponses ?? {}).filter(([key]) => asking !== undefined && key in asking.inputRequests),
    );
    if (asking === undefined || Object.keys(answers).length === 0) return {};
    try {
      await tasks.answerTask(grant.account, id, asking.inputRequestId, answers);
    } catch (err) {
      if (err instanceof WireError && (err.code === ErrorCodes.invalidInput || err.code === ErrorCodes.inputRefused))
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message, {
          code: err.code,
          ...(typeof err.details.field === 'string' ? { field: err.details.field } : {}),
        });
      // The round moved on under the update (a person's answer completed it): nothing left to take.
      if (err instanceof WireError && err.code === ErrorCodes.conflict) return {};
      throw err;
    }
    return {};
  }
}

/** The `inputResponses` the SDK took off a request's params, when they are a map. */
function inputResponsesOf(mcpReq: { inputResponses?: unknown }): Record<string, unknown> | undefined {
  const v = mcpReq.inputResponses;
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** A task's fault as the MCP error a client expects: an outage of the connector's, never the client's fault. */
function protocolErrorOf(err: unknown): ProtocolError {
  const wire = err instanceof WireError ? err : toWireError(err);
  return new ProtocolError(ProtocolErrorCode.InternalError, wire.message, { code: wire.code });
}
