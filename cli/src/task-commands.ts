// `mcpx tasks list|show|cancel|result` and the wait of `mcpx call` on a task (docs/tasks.md), for the
// key's account only. Through the API by default (the registry's task actions, signed with the key);
// in the NATS mode (`--nats`, the runtime's credentials) where a task is brokered, `mcp.proxy.tasks`.
import {
  ErrorCodes,
  TASK_ID_RE,
  WireError,
  isFinalTaskState,
  makeSubjects,
  type TaskEvent,
  type TaskView,
} from '@mcpx/contracts';
import type { ProxyResult, TaskHandle } from '@mcpx/domain';
import { TaskClient } from '@mcpx/proxy-client';
import { UsageError, flag, need, type ParsedArgs, type Print } from './args.js';
import type { KeyPair } from '@mcpx/envelope';
import { act, readKey, withProxy, type CliEnv } from './client.js';
import { agentNames } from './agent-names.js';
import { renderResult } from './result-summary.js';
import { terminalText } from './terminal-text.js';

/** A wait outlives the task's own expiry by this much: the broker ends it `expired` then, and says so. */
const EXPIRY_GRACE_MS = 30_000;

type StatusOf = Pick<TaskEvent, 'task' | 'state' | 'statusMessage' | 'errorCode'>;

/** What the commands need of tasks; the same answers either way (the task service answers both). */
interface TaskOps {
  list(filter: { agent?: string; limit?: number }): Promise<TaskView[]>;
  get(id: string): Promise<TaskView>;
  cancel(id: string): Promise<TaskView>;
  result(id: string): Promise<ProxyResult>;
  /** Until the task ends (or `timeoutMs`), each change told to `onStatus`: its events over NATS, a read a second through the API. */
  wait(id: string, timeoutMs: number, onStatus: (e: StatusOf) => void): Promise<TaskView>;
}

/** Through the API a wait reads the task this often (the NATS mode hears its events). */
const API_WAIT_EVERY_MS = 1_000;

/** The registry's task actions, signed with the key. */
function apiOps(env: CliEnv, key: KeyPair): TaskOps {
  const get = async (task: string): Promise<TaskView> => (await act(env, key, 'GetTask', { task })).task;
  return {
    list: async (filter) => (await act(env, key, 'ListTasks', filter)).tasks,
    get,
    cancel: async (task) => (await act(env, key, 'CancelTask', { task })).task,
    result: async (task) => (await act(env, key, 'GetTaskResult', { task })).result,
    wait: async (id, timeoutMs, onStatus) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const t = await get(id);
        onStatus(eventOf(t));
        if (isFinalTaskState(t.state) || Date.now() >= until) return t;
        await new Promise((r) => setTimeout(r, Math.min(API_WAIT_EVERY_MS, Math.max(0, until - Date.now()))));
      }
    },
  };
}

function eventOf(t: TaskView): StatusOf {
  return {
    task: t.id,
    state: t.state,
    ...(t.statusMessage !== undefined ? { statusMessage: t.statusMessage } : {}),
    ...(t.error !== undefined ? { errorCode: t.error.code } : {}),
  };
}

/** The task service over NATS, as a runtime reaches it. */
function natsOps(tasks: TaskClient, account: string): TaskOps {
  return {
    list: (filter) => tasks.listTasks(account, filter),
    get: (id) => tasks.getTask(account, id),
    cancel: (id) => tasks.cancelTask(account, id),
    result: (id) => tasks.taskResult(account, id),
    // A state read from the row is told too: one the task reached before the subscription (a
    // question asked as the CLI connected) has no event of its own.
    wait: (id, timeoutMs, onStatus) =>
      tasks.waitTask(account, id, {
        timeoutMs,
        onStatus,
        onRead: (t) => {
          if (t !== undefined) onStatus(eventOf(t));
        },
      }),
  };
}

function taskId(args: ParsedArgs): string {
  const id = need(args, 2, 'ID');
  if (!TASK_ID_RE.test(id)) throw new UsageError(`${id} is not a task id (tsk_…)`);
  return id;
}

/** A server's status text on one line: its newlines would let it pose as lines of ours. */
const oneLine = (text: string): string => text.replace(/[\r\n]+/g, ' ');

/** One status line on stderr: `task tsk_… working: exporting (3 s left)` (the server's text made safe for a terminal). */
export function taskStatusLine(e: Pick<TaskEvent, 'task' | 'state' | 'statusMessage' | 'errorCode'>): string {
  const message = e.statusMessage !== undefined && e.statusMessage !== '' ? `: ${oneLine(e.statusMessage)}` : '';
  const code = e.errorCode !== undefined ? ` (${e.errorCode})` : '';
  return terminalText(`task ${e.task} ${e.state}${code}${message}`);
}

function taskLine(t: TaskView, names: ReadonlyMap<string, string>): string {
  const message = t.statusMessage !== undefined && t.statusMessage !== '' ? `  ${oneLine(t.statusMessage)}` : '';
  return `${t.id}  ${t.state}  ${t.tool}  agent ${names.get(t.agent) ?? t.agent}  created ${t.createdAt}${message}`;
}

function taskText(t: TaskView, names: ReadonlyMap<string, string>): string {
  return [
    `task ${t.id}: ${t.state}${t.statusMessage !== undefined && t.statusMessage !== '' ? ` (${oneLine(t.statusMessage)})` : ''}`,
    `  tool ${t.tool}  server ${t.server}  agent ${names.get(t.agent) ?? t.agent}  run ${t.run}  dialect ${t.dialect}`,
    `  created ${t.createdAt}  updated ${t.updatedAt}  ${t.finishedAt !== undefined ? `finished ${t.finishedAt}` : `expires ${t.expiresAt}`}`,
    ...(t.error !== undefined ? [`  error ${t.error.code}: ${oneLine(t.error.message)}`] : []),
    ...(t.inputRequestId !== undefined ? [`  waiting for input: mcpx inputs answer ${t.inputRequestId} …`] : []),
    ...(t.resultReady ? [`  result ready: mcpx tasks result ${t.id}`] : []),
    ...(t.poller !== undefined ? [`  polled by ${t.poller}`] : []),
  ].join('\n');
}

async function withTasks<T>(env: CliEnv, fn: (tasks: TaskOps) => Promise<T>): Promise<T> {
  const key = await readKey(env.keyFile);
  if (!env.viaNats) return await fn(apiOps(env, key));
  return await withProxy(env, (_proxy, nc) =>
    fn(natsOps(new TaskClient(nc, makeSubjects(env.natsPrefix)), key.principal)),
  );
}

/**
 * Waits for a task a call answered with (events, not polling), its status on stderr when
 * `showStatus`, then takes its result; a task that failed, was cancelled or expired throws the
 * typed error it ended with. Bounded by the task's own expiry (the broker ends it there).
 */
export async function waitForTask(env: CliEnv, handle: TaskHandle, showStatus: boolean): Promise<ProxyResult> {
  return await withTasks(env, async (tasks) => {
    let shown = '';
    let said: string | undefined;
    const show = (e: StatusOf): void => {
      shown = e.state;
      said = e.statusMessage;
      if (showStatus) process.stderr.write(`${taskStatusLine(e)}\n`);
    };
    show({
      task: handle.id,
      state: handle.state as TaskEvent['state'],
      ...(handle.statusMessage !== undefined ? { statusMessage: handle.statusMessage } : {}),
    });
    const now = await tasks.get(handle.id);
    const timeoutMs = Math.max(0, Date.parse(now.expiresAt) - Date.now()) + EXPIRY_GRACE_MS;
    // Through the API each read is told; only a change is shown.
    const ended = await tasks.wait(handle.id, timeoutMs, (e) => {
      if (e.state !== shown || e.statusMessage !== said) show(e);
    });
    // An end heard from the row rather than an event (it came before the subscription) is shown too.
    if (ended.state !== shown) {
      show({
        task: ended.id,
        state: ended.state,
        ...(ended.statusMessage !== undefined ? { statusMessage: ended.statusMessage } : {}),
        ...(ended.error !== undefined ? { errorCode: ended.error.code } : {}),
      });
    }
    if (!isFinalTaskState(ended.state)) {
      throw new WireError(
        ErrorCodes.timeout,
        `task ${handle.id} is still ${ended.state} past its expiry: see mcpx tasks show ${handle.id}`,
        { task: handle.id },
      );
    }
    return await tasks.result(handle.id);
  });
}

/** `mcpx tasks list [--agent AGENT] [--limit N]`: the account's tasks, newest first, never their results. */
export async function tasksList(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const limitFlag = flag(args, 'limit');
  const limit = limitFlag === undefined ? undefined : Number(limitFlag);
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0 && limit <= 200))
    throw new UsageError('--limit takes a number, 1 to 200');
  const agentRef = flag(args, 'agent');
  // An agent is named by its name or id; the broker knows ids only (the action takes either).
  const agent = agentRef === undefined || !env.viaNats ? agentRef : await agentIdOf(env, agentRef);
  const list = await withTasks(env, (tasks) =>
    tasks.list({ ...(agent !== undefined ? { agent } : {}), ...(limit !== undefined ? { limit } : {}) }),
  );
  const names = await namesOf(env, list);
  print({ tasks: list }, () => (list.length === 0 ? 'no tasks' : list.map((t) => taskLine(t, names)).join('\n')));
}

/** `mcpx tasks show ID`: the task as it stands. */
export async function tasksShow(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const id = taskId(args);
  const task = await withTasks(env, (tasks) => tasks.get(id));
  const names = await namesOf(env, [task]);
  print({ task }, () => taskText(task, names));
}

/** `mcpx tasks cancel ID`: the server is asked to cancel it, and it ends `cancelled`. */
export async function tasksCancel(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const id = taskId(args);
  const task = await withTasks(env, (tasks) => tasks.cancel(id));
  print({ task }, () => `task ${task.id}: ${task.state}`);
}

/** `mcpx tasks result ID`: a finished task's result, printed as `mcpx call` prints one. */
export async function tasksResult(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const id = taskId(args);
  const result = await withTasks(env, (tasks) => tasks.result(id));
  print({ ...result, taskId: id }, () => renderResult(result));
}

async function agentIdOf(env: CliEnv, ref: string): Promise<string> {
  const key = await readKey(env.keyFile);
  return (await act(env, key, 'GetAgent', { agent: ref })).agent.id;
}

/** Agents' names for the human output; the ids stand when the API cannot be reached. */
async function namesOf(env: CliEnv, list: TaskView[]): Promise<ReadonlyMap<string, string>> {
  if (list.length === 0) return new Map();
  const key = await readKey(env.keyFile);
  return await agentNames(
    env,
    key,
    list.map((t) => t.agent),
  ).catch(() => new Map<string, string>());
}
