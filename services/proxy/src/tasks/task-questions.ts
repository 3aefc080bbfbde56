import type { Counter, Meter, Tracer } from '@opentelemetry/api';
import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import type { Logger } from '@mcpx/log';
import { ProtocolError, taskRequest, type TaskWireTarget, type UpstreamTask } from '@mcpx/mcp-client';
import type { InputGate } from '../input-requests.js';
import { toWire } from '../wire-errors.js';
import { answerersOf, type TaskRow, type TaskStore } from './task-store.js';

export interface TaskQuestionsDeps {
  inputs: InputGate;
  store: TaskStore;
  instance: string;
  /** Publishes the task's `input_required` event naming its input request. */
  announce: (row: TaskRow, inputRequestId: string) => void;
  log: Logger;
  meter: Meter;
  tracer: Tracer;
}

/** How often a waiting question's input request is read again for its answer (Redis, one GET). */
const ANSWER_CHECK_MS = 300;
const UPDATE_TIMEOUT_MS = 30_000;
/** The one question a legacy server pushes at a time, under this key in its input request. */
const PUSHED_KEY = 'question';

/** A settled `tasks/result` of a legacy task's question stream: the result, or the server's error. */
type Streamed = { result: Record<string, unknown> } | { error: ProtocolError };

/** An asked round: its input request, or why it cannot be asked (a typed refusal, a quota). */
type Asked = { ok: true; inputRequestId: string } | { ok: false; error: WireError };
/** A round's answers: still waiting, answered (by key), or gone (expired, refused): each question is then cancelled. */
type Answers =
  { state: 'waiting' } | { state: 'answered'; responses: Record<string, unknown> } | { state: 'gone'; reason: string };

/**
 * A task's questions (`input_required`) through the input-request path (docs/tasks.md#questions):
 * each round is recorded as an input request; the questions the task's caller declared it answers
 * (its call's `answers`: the runtime's `waitTask`, the endpoint's client) go to it, the rest to a
 * person (`mcpx inputs answer`, the console); every answer is kept with the request, and the task
 * goes on once all are in.
 * - 2025-11-25: the server queues its `elicitation/create` for `tasks/result`; the instance that
 *   sees `input_required` opens that stream, records the pushed question, and answers it on the
 *   session once a person did. The stream ends with the task's result, which the broker keeps.
 * - 2026-07-28: `tasks/get` carries the questions (`inputRequests`); they are recorded once, and
 *   the answers go back with `tasks/update`.
 * The task's agent, run and tool bind the input request; the arguments' place holds the task id.
 */
export class TaskQuestions {
  /** Legacy `tasks/result` streams this instance holds open, by task. */
  private readonly streams = new Map<string, { result: Promise<Streamed>; abort: AbortController }>();
  /** The modern rounds this instance answered, by task (a `tasks/get` may still show one until the server moves on). */
  private readonly answered = new Map<string, string>();
  private readonly stopping = new AbortController();
  private readonly rounds: Counter;

  constructor(private readonly deps: TaskQuestionsDeps) {
    this.rounds = deps.meter.createCounter('mcpx_proxy_task_questions_total', {
      description: 'Questions of brokered tasks, by outcome (asked, answered, gone, refused) and dialect',
    });
  }

  /** Told of each poll's task status: an `input_required` round is asked, or its answer sent. */
  async polled(
    row: TaskRow,
    task: UpstreamTask,
    target: TaskWireTarget,
    era: 'modern' | 'legacy',
    trace?: Record<string, string>,
  ): Promise<WireError | undefined> {
    if (task.status !== 'input_required') {
      this.answered.delete(row.id);
      return undefined;
    }
    if (era === 'legacy') {
      if (!this.streams.has(row.id)) this.openStream(row, target, trace);
      return undefined;
    }
    return await this.modernRound(row, task, target, trace);
  }

  /** The legacy question stream's end for a task, when this instance holds one (the task's result, or the server's error). */
  streamed(id: string): Promise<Streamed> | undefined {
    return this.streams.get(id)?.result;
  }

  /** Forgets what this instance held for an ended task. */
  ended(id: string): void {
    // A stream still open (the task was cancelled, or expired) has nothing more to bring.
    this.streams.get(id)?.abort.abort();
    this.streams.delete(id);
    this.answered.delete(id);
  }

  /** Closes the open streams: their questions stay recorded, and the tasks' leases go to another instance. */
  stop(): void {
    this.stopping.abort();
  }

  private openStream(row: TaskRow, target: TaskWireTarget, trace: Record<string, string> | undefined): void {
    const withQuestions: TaskWireTarget = {
      ...target,
      serverRequest: (method, params, signal) => this.pushed(row, method, params, signal),
    };
    const timeoutMs = Math.max(1_000, new Date(row.expires_at).getTime() - Date.now());
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, this.stopping.signal]);
    const stream = taskRequest(
      withQuestions,
      'tasks/result',
      { taskId: row.upstream_task_id },
      { timeoutMs, signal, ...(trace !== undefined ? { trace } : {}) },
    ).then(
      (result): Streamed => ({ result }),
      (err: unknown): Streamed => {
        // A stream that broke says nothing of the task: the next poll opens another.
        if (!(err instanceof ProtocolError)) {
          if (this.streams.get(row.id)?.result === stream) this.streams.delete(row.id);
          this.deps.log.info("a task's question stream ended without its result", {
            task: row.id,
            code: toWire(err).code,
          });
          throw err;
        }
        return { error: err };
      },
    );
    // Nobody may await it (the task may be cancelled): its failure is logged above, never unhandled.
    stream.catch(() => {});
    this.streams.set(row.id, { result: stream, abort });
  }

  /** A question the legacy server pushed on the stream: recorded, then answered once a person did (or cancelled when it cannot be). */
  private async pushed(row: TaskRow, method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    const asked = await this.ask(row, { [PUSHED_KEY]: { method, params } }, 'legacy');
    if (!asked.ok) throw new ProtocolError(-32603, asked.error.message.slice(0, 300));
    for (;;) {
      if (signal.aborted) throw new ProtocolError(-32603, 'the connector stopped waiting for the answer');
      const answers = await this.answers(row, asked.inputRequestId);
      if (answers.state === 'answered') {
        await this.deps.store.asked(row.id, this.deps.instance, null).catch(() => false);
        return answers.responses[PUSHED_KEY] ?? { action: 'cancel' };
      }
      if (answers.state === 'gone') return { action: 'cancel' };
      await new Promise((r) => setTimeout(r, ANSWER_CHECK_MS));
    }
  }

  /** A modern round: asked once; its answers (or cancels, when it expired) sent with `tasks/update`. */
  private async modernRound(
    row: TaskRow,
    task: UpstreamTask,
    target: TaskWireTarget,
    trace: Record<string, string> | undefined,
  ): Promise<WireError | undefined> {
    const questions = normalized(task.inputRequests);
    const keys = Object.keys(questions);
    if (keys.length === 0) return undefined;
    const signature = JSON.stringify(questions);
    if (this.answered.get(row.id) === signature) return undefined;
    if (row.input_request_id === null) {
      const asked = await this.ask(row, questions, 'modern');
      return asked.ok ? undefined : asked.error;
    }
    const answers = await this.answers(row, row.input_request_id);
    if (answers.state === 'waiting') return undefined;
    const inputResponses =
      answers.state === 'answered' ? answers.responses : Object.fromEntries(keys.map((k) => [k, { action: 'cancel' }]));
    try {
      await taskRequest(
        target,
        'tasks/update',
        { taskId: row.upstream_task_id, inputResponses },
        { timeoutMs: UPDATE_TIMEOUT_MS, ...(trace !== undefined ? { trace } : {}) },
      );
    } catch (err) {
      // The server refused the answers (a protocol error): the task cannot go on, but it is not lost.
      if (!(err instanceof ProtocolError)) throw err;
      return new WireError(ErrorCodes.serverError, `the server refused the answers: ${err.message.slice(0, 300)}`, {
        server: row.server,
        task: row.id,
        reason: 'answers_refused',
        mcpCode: err.code,
      });
    }
    this.answered.set(row.id, signature);
    await this.deps.store.asked(row.id, this.deps.instance, null);
    return undefined;
  }

  /** Records a round as an input request for a person, and says so on the task's row and subject; under a `proxy.task.question` span. */
  private async ask(
    row: TaskRow,
    questions: Record<string, { method: string; params?: unknown }>,
    era: 'modern' | 'legacy',
  ): Promise<Asked> {
    const span = this.deps.tracer.startSpan('proxy.task.question', {
      attributes: {
        'mcp.account': row.account_id,
        'mcpx.task': row.id,
        'mcpx.task.dialect': row.dialect,
        'mcp.server': row.server,
      },
    });
    try {
      const asked = await this.record(row, questions, era);
      span.setAttribute('mcpx.task.question', asked.ok ? 'asked' : asked.error.code);
      if (asked.ok) span.setAttribute('mcpx.input_request', asked.inputRequestId);
      return asked;
    } catch (err) {
      span.recordException(err as Error);
      throw err;
    } finally {
      span.end();
    }
  }

  private async record(
    row: TaskRow,
    questions: Record<string, { method: string; params?: unknown }>,
    era: 'modern' | 'legacy',
  ): Promise<Asked> {
    const req = requestOf(row);
    const doc = docOf(row);
    let id: string | undefined;
    try {
      // The task's caller answers what its call declared it answers (kept on the row), a person the
      // rest; every answer is kept with the input request, since no call is re-sent to carry it.
      const items = this.deps.inputs.classify(req, doc, questions, answerersOf(row).formsByRuntime === true);
      await this.deps.inputs.stop(req, doc, items, {
        argsHash: bindingOf(row),
        round: 1,
        approved: true,
        era,
        storeAll: true,
      });
    } catch (err) {
      // The gate records the round and stops a call with `input_required` naming it: here that is the way on.
      if (
        err instanceof WireError &&
        err.code === ErrorCodes.inputRequired &&
        typeof err.details.inputRequestId === 'string'
      )
        id = err.details.inputRequestId;
      else if (err instanceof WireError) {
        this.rounds.add(1, { outcome: 'refused', dialect: row.dialect });
        return { ok: false, error: err };
      } else throw err;
    }
    if (id === undefined) throw new Error('the input gate recorded no input request');
    await this.deps.store.asked(row.id, this.deps.instance, id);
    this.rounds.add(1, { outcome: 'asked', dialect: row.dialect });
    this.deps.announce(row, id);
    return { ok: true, inputRequestId: id };
  }

  /** A round's answers, once a person gave them all. */
  private async answers(row: TaskRow, inputRequestId: string): Promise<Answers> {
    try {
      const resumed = await this.deps.inputs.resume({ ...requestOf(row), inputRequestId }, docOf(row), bindingOf(row));
      this.rounds.add(1, { outcome: 'answered', dialect: row.dialect });
      return { state: 'answered', responses: resumed.inputResponses };
    } catch (err) {
      if (err instanceof WireError && err.code === ErrorCodes.inputRequired) return { state: 'waiting' };
      if (err instanceof WireError && err.code === ErrorCodes.inputRefused) {
        this.rounds.add(1, { outcome: 'gone', dialect: row.dialect });
        return { state: 'gone', reason: String(err.details.reason ?? 'refused') };
      }
      throw err;
    }
  }
}

/** The call a task's input request is bound to: the task's agent, run and tool, and what its caller answers. */
function requestOf(row: TaskRow): ProxyCallRequest {
  const { forms, sampling, roots } = answerersOf(row);
  const answers = {
    ...(forms === true ? { forms } : {}),
    ...(sampling === true ? { sampling } : {}),
    ...(roots === true ? { roots } : {}),
  };
  return {
    account: row.account_id,
    agent: row.agent_id,
    run: row.run,
    tool: row.tool,
    arguments: {},
    callId: row.id,
    ...(Object.keys(answers).length > 0 ? { answers } : {}),
  };
}

/** What the input gate names in its messages: the task's tool and server. */
function docOf(row: TaskRow): McpToolDocument {
  return { name: row.tool, server: row.server, remoteName: row.remote_name } as McpToolDocument;
}

/** The binding's place for the arguments holds the task: an answer goes to this task's round only. */
function bindingOf(row: TaskRow): string {
  return `task:${row.id}`;
}

function normalized(input: Record<string, unknown> | undefined): Record<string, { method: string; params?: unknown }> {
  const out: Record<string, { method: string; params?: unknown }> = {};
  for (const [key, v] of Object.entries(input ?? {})) {
    const q = v as { method?: unknown; params?: unknown } | null;
    out[key] =
      q !== null && typeof q === 'object' && typeof q.method === 'string'
        ? { method: q.method, ...(q.params !== undefined ? { params: q.params } : {}) }
        : { method: '' };
  }
  return out;
}
