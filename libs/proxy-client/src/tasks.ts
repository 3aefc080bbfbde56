import type { NatsConnection, Status } from '@nats-io/transport-node';
import {
  ErrorCodes,
  NatsFailures,
  natsFailure,
  TASK_ID_RE,
  WireError,
  decodeTaskEvent,
  decodeTaskReply,
  encodeTaskRequest,
  isFinalTaskState,
  proxyResultValue,
  taskQuestionsValue,
  taskViewValue,
  type InputRequestItem,
  type Subjects,
  type TaskAnswered,
  type TaskEvent,
  type TaskQuestionsView,
  type TaskRequest,
  type TaskView,
} from '@mcpx/contracts';
import type { ProxyResult } from '@mcpx/domain';
import { traceHeaders, type Context } from '@mcpx/telemetry';

/**
 * Each request waits this long, and is sent again twice: every operation is idempotent, and a
 * request delivered to an instance that died as it arrived is lost (core NATS is at most once).
 */
const REQUEST_TIMEOUT_MS = 5_000;
const REQUEST_ATTEMPTS = 3;

/** A wait's read that failed for an outage is made again after this pause, doubling up to the most. */
const OUTAGE_READ_FIRST_MS = 250;
const OUTAGE_READ_MAX_MS = 4_000;

/**
 * When a task's wait reads its row again: after a reconnection to NATS (also one that came while
 * a read was under way: the read may have been answered before events could reach us again), or
 * after a pause when the last read failed for an outage.
 */
class Wake {
  private missed = false;
  private resolve: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** A read begins: the reconnections before it are caught up by it. */
  reading(): void {
    this.missed = false;
  }

  reconnected(): void {
    this.missed = true;
    this.resolve?.();
  }

  /** Resolves `'read'` at the next reconnection (at once if one came during the last read), or after `pauseMs`. */
  next(pauseMs: number | undefined): Promise<'read'> {
    this.stop();
    return new Promise((resolve) => {
      this.resolve = () => resolve('read');
      if (this.missed) this.resolve();
      else if (pauseMs !== undefined) this.timer = setTimeout(this.resolve, pauseMs);
    });
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.resolve = undefined;
  }
}

/**
 * The runtime's side of brokered tasks (docs/tasks.md): a call that outlived the call bound
 * answered `{task: {id, state, statusMessage}}`; these read it, wait for it (events, not
 * polling), cancel it and take its result. Any proxy instance answers (`mcp.proxy.tasks`).
 */
export class TaskClient {
  /**
   * `trace`: the trace context every request carries (the proxy's task span is its child); unset,
   * the active one. A caller whose context does not follow awaits passes its span's with
   * {@link withTrace}.
   */
  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    private readonly trace?: Context,
  ) {}

  /** The same client, each of its requests carrying `ctx`'s trace context (one request's span, passed by hand). */
  withTrace(ctx: Context): TaskClient {
    return new TaskClient(this.nc, this.subjects, ctx);
  }

  /** The task as it stands. `not_found` for a task of another account or none. */
  async getTask(account: string, task: string): Promise<TaskView> {
    return taskViewValue(await this.ask({ op: 'get', account, task: checkedId(task) }), 'task');
  }

  /** The account's tasks (one agent's when named), newest first. */
  async listTasks(account: string, opts: { agent?: string; limit?: number } = {}): Promise<TaskView[]> {
    const value = (await this.ask({ op: 'list', account, ...opts })) as { tasks?: unknown };
    if (!Array.isArray(value?.tasks))
      throw new WireError(ErrorCodes.internal, 'malformed task list from the proxy', { field: 'tasks' });
    return value.tasks.map((t, i) => taskViewValue(t, `tasks[${i}]`));
  }

  /** Asks the server to cancel the task; it ends `cancelled` (a task that had ended is answered as it stands). */
  async cancelTask(account: string, task: string): Promise<TaskView> {
    return taskViewValue(await this.ask({ op: 'cancel', account, task: checkedId(task) }), 'task');
  }

  /**
   * The result of a finished task, as its call would have answered; a task that failed, was
   * cancelled or expired throws the typed error it ended with; one still open `conflict`.
   */
  async taskResult(account: string, task: string): Promise<ProxyResult> {
    return proxyResultValue(await this.ask({ op: 'result', account, task: checkedId(task) }), 'result');
  }

  /** The round a task waits on (`input_required`): its questions, who answers each, the keys answered. `conflict` when it asks nothing. */
  async taskQuestions(account: string, task: string): Promise<TaskQuestionsView> {
    return taskQuestionsValue(await this.ask({ op: 'questions', account, task: checkedId(task) }), 'questions');
  }

  /**
   * Answers the task's questions addressed to its caller (`answerBy: 'runtime'`), by key, for the
   * round `inputRequestId` names; answers may come in parts, and the task goes on once all of the
   * round's are in (a person's too). `invalid_input` naming the key for an answer that does not fit.
   */
  async answerTask(
    account: string,
    task: string,
    inputRequestId: string,
    inputResponses: Record<string, unknown>,
  ): Promise<TaskAnswered> {
    const value = (await this.ask({
      op: 'answer',
      account,
      task: checkedId(task),
      inputRequestId,
      inputResponses,
    })) as {
      complete?: unknown;
    };
    return { complete: value?.complete === true };
  }

  /**
   * Waits until the task ends (or `timeoutMs` passes: it is answered as it stands then), hearing
   * its status events (`mcp.tasks.<acct>.<task>`; `onStatus` is told each) rather than polling.
   * The row is read once after subscribing, so an end that came before the subscription is not
   * missed, and again after each reconnection to NATS (events published while the connection was
   * down are not delivered; a reconnection during a read is not missed: the row is read again). A
   * read that fails for an outage (`unavailable`, `timeout`, `transport_error`) is not the task's
   * end: it is read again after a pause (`outageReadMs`, doubling to 4 s) until a read answers. A
   * proxy that ended the task while its own connection was down could not publish the end (nats.js
   * drops what was queued while disconnected), and no reconnection of ours follows its own: only
   * a read hears of it.
   */
  async waitTask(account: string, task: string, opts: TaskWait = {}): Promise<TaskView> {
    const id = checkedId(task);
    const asked = this.answering(account, id, opts);
    const sub = this.nc.subscribe(this.subjects.taskStatus(account, id));
    const statuses = this.nc.status() as AsyncIterable<Status> & { stop?: () => void };
    const wake = new Wake();
    let timer: NodeJS.Timeout | undefined;
    try {
      const ended = new Promise<'ended'>((resolve) => {
        void (async () => {
          for await (const msg of sub) {
            let event: TaskEvent;
            try {
              event = decodeTaskEvent(msg.data);
            } catch {
              continue;
            }
            if (event.account !== account || event.task !== id) continue;
            opts.onStatus?.(event);
            if (event.inputRequestId !== undefined) asked(event.inputRequestId);
            if (isFinalTaskState(event.state)) return resolve('ended');
          }
          resolve('ended');
        })();
      });
      void (async () => {
        for await (const s of statuses) if (s.type === 'reconnect') wake.reconnected();
      })().catch(() => {});
      const stop = new Promise<'stop'>((resolve) => {
        if (opts.timeoutMs !== undefined) timer = setTimeout(() => resolve('stop'), opts.timeoutMs);
        opts.signal?.addEventListener('abort', () => resolve('stop'), { once: true });
      });
      await this.nc.flush();
      const firstPauseMs = opts.outageReadMs ?? OUTAGE_READ_FIRST_MS;
      let pauseMs = firstPauseMs;
      for (;;) {
        wake.reading();
        const now = await this.getTask(account, id).catch(passingOutage);
        opts.onRead?.(now);
        if (now !== undefined && isFinalTaskState(now.state)) return now;
        if (now?.state === 'input_required' && now.inputRequestId !== undefined) asked(now.inputRequestId);
        const woke = await Promise.race([ended, stop, wake.next(now === undefined ? pauseMs : undefined)]);
        if (woke !== 'read') break;
        pauseMs = now === undefined ? Math.min(pauseMs * 2, OUTAGE_READ_MAX_MS) : firstPauseMs;
      }
      return await this.getTask(account, id);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      wake.stop();
      statuses.stop?.();
      sub.unsubscribe();
    }
  }

  /**
   * Answers each round of the task's questions addressed to the caller once, with `opts.answer`
   * (in the background: the wait goes on meanwhile); a failure is told to `onAnswerError`, and the
   * round is left to expire (its server is then told each question was cancelled).
   */
  private answering(account: string, id: string, opts: TaskWait): (inputRequestId: string) => void {
    const seen = new Set<string>();
    return (inputRequestId) => {
      if (opts.answer === undefined || seen.has(inputRequestId)) return;
      seen.add(inputRequestId);
      const answer = opts.answer;
      void (async () => {
        const round = await this.taskQuestions(account, id);
        if (round.inputRequestId !== inputRequestId) return;
        const mine = round.requests.filter((q) => q.answerBy === 'runtime' && !round.answered.includes(q.key));
        if (mine.length === 0) return;
        const responses = await answer(mine, round);
        await this.answerTask(account, id, inputRequestId, responses);
      })().catch((err: unknown) => {
        // Asked again at the next event or read: an outage is not the end of the round.
        seen.delete(inputRequestId);
        opts.onAnswerError?.(err);
      });
    };
  }

  private async ask(req: TaskRequest): Promise<unknown> {
    const headers = traceHeaders(this.trace);
    const payload = encodeTaskRequest(req);
    let data: Uint8Array | undefined;
    for (let attempt = 1; data === undefined; attempt++) {
      try {
        data = (
          await this.nc.request(
            this.subjects.proxyTasks,
            payload,
            headers === undefined ? { timeout: REQUEST_TIMEOUT_MS } : { timeout: REQUEST_TIMEOUT_MS, headers },
          )
        ).data;
      } catch (err) {
        // Told apart by nats.js' own error classes, never by a message.
        const failure = natsFailure(err);
        const timedOut = failure === NatsFailures.timeout;
        const noResponders = failure === NatsFailures.noResponders;
        if ((timedOut || noResponders) && attempt < REQUEST_ATTEMPTS) continue;
        if (timedOut) throw new WireError(ErrorCodes.timeout, 'the proxy did not answer in time');
        if (noResponders) throw new WireError(ErrorCodes.transportError, 'no proxy is running');
        throw err;
      }
    }
    const reply = decodeTaskReply(data);
    if (!reply.ok) throw WireError.from(reply.error);
    return reply.value;
  }
}

/** How {@link TaskClient.waitTask} waits. */
export interface TaskWait {
  timeoutMs?: number;
  /** Told each status event of the task. */
  onStatus?: (event: TaskEvent) => void;
  /** Told each read of the task's row the wait makes (`undefined`: the read failed for an outage). */
  onRead?: (task: TaskView | undefined) => void;
  /** The first pause before a read that failed for an outage is made again (default 250 ms; it doubles to 4 s). */
  outageReadMs?: number;
  signal?: AbortSignal;
  /**
   * Answers the task's questions addressed to its caller (`answerBy: 'runtime'`: sampling, roots,
   * and forms when the agent lets its runtime answer them; the call must have declared them in
   * `answers`), by key. Absent: such a round waits until it expires (a person answers the rest).
   */
  answer?: (questions: InputRequestItem[], round: TaskQuestionsView) => Promise<Record<string, unknown>>;
  /** Told when a round could not be answered (the answer did not fit, the proxy was away). */
  onAnswerError?: (err: unknown) => void;
}

/** A read that failed for an outage (the proxies' store, NATS) says nothing of the task: undefined. */
function passingOutage(err: unknown): undefined {
  if (
    err instanceof WireError &&
    (err.code === ErrorCodes.unavailable || err.code === ErrorCodes.timeout || err.code === ErrorCodes.transportError)
  )
    return undefined;
  throw err;
}

function checkedId(task: string): string {
  if (!TASK_ID_RE.test(task))
    throw new WireError(ErrorCodes.invalidInput, 'task must be a task id (tsk_…)', { field: 'task' });
  return task;
}
