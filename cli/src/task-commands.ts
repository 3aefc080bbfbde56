// `mcpx tasks list|show|cancel|result` and the wait of `mcpx call` on a task (docs/tasks.md):
// over NATS with the runtime's credentials, as `mcpx call --nats`, for the key's account only.
// A task is read where it is brokered, `mcp.proxy.tasks` (the registry's task actions are not used here yet).
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
import { act, readKey, withProxy, type CliEnv } from './client.js';
import { agentNames } from './agent-names.js';
import { renderResult } from './result-summary.js';
import { terminalText } from './terminal-text.js';

/** A wait outlives the task's own expiry by this much: the broker ends it `expired` then, and says so. */
const EXPIRY_GRACE_MS = 30_000;

/** The NATS mode only: a user without it is told how, never sent to a NATS it cannot use. */
function needNats(env: CliEnv, what: string): void {
  if (!env.viaNats)
    throw new UsageError(
      `${what} goes over NATS with the runtime's credentials: add --nats URL (or MCPX_NATS_URL) and --nats-user/--nats-password or --nats-credentials`,
    );
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
  ].join('\n');
}

async function withTasks<T>(env: CliEnv, fn: (tasks: TaskClient, account: string) => Promise<T>): Promise<T> {
  const key = await readKey(env.keyFile);
  return await withProxy(env, (_proxy, nc) => fn(new TaskClient(nc, makeSubjects(env.natsPrefix)), key.principal));
}

/**
 * Waits for a task a call answered with (events, not polling), its status on stderr when
 * `showStatus`, then takes its result; a task that failed, was cancelled or expired throws the
 * typed error it ended with. Bounded by the task's own expiry (the broker ends it there).
 */
export async function waitForTask(env: CliEnv, handle: TaskHandle, showStatus: boolean): Promise<ProxyResult> {
  return await withTasks(env, async (tasks, account) => {
    let shown = '';
    const show = (e: Pick<TaskEvent, 'task' | 'state' | 'statusMessage' | 'errorCode'>): void => {
      shown = e.state;
      if (showStatus) process.stderr.write(`${taskStatusLine(e)}\n`);
    };
    show({
      task: handle.id,
      state: handle.state as TaskEvent['state'],
      ...(handle.statusMessage !== undefined ? { statusMessage: handle.statusMessage } : {}),
    });
    const now = await tasks.getTask(account, handle.id);
    const timeoutMs = Math.max(0, Date.parse(now.expiresAt) - Date.now()) + EXPIRY_GRACE_MS;
    const ended = await tasks.waitTask(account, handle.id, { timeoutMs, onStatus: show });
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
    return await tasks.taskResult(account, handle.id);
  });
}

/** `mcpx tasks list [--agent AGENT] [--limit N]`: the account's tasks, newest first, never their results. */
export async function tasksList(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  needNats(env, 'mcpx tasks');
  const limitFlag = flag(args, 'limit');
  const limit = limitFlag === undefined ? undefined : Number(limitFlag);
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0 && limit <= 200))
    throw new UsageError('--limit takes a number, 1 to 200');
  const agentRef = flag(args, 'agent');
  // An agent is named by its name or id; the broker knows ids only.
  const agent = agentRef === undefined ? undefined : await agentIdOf(env, agentRef);
  const list = await withTasks(env, (tasks, account) =>
    tasks.listTasks(account, { ...(agent !== undefined ? { agent } : {}), ...(limit !== undefined ? { limit } : {}) }),
  );
  const names = await namesOf(env, list);
  print({ tasks: list }, () => (list.length === 0 ? 'no tasks' : list.map((t) => taskLine(t, names)).join('\n')));
}

/** `mcpx tasks show ID`: the task as it stands. */
export async function tasksShow(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  needNats(env, 'mcpx tasks');
  const id = taskId(args);
  const task = await withTasks(env, (tasks, account) => tasks.getTask(account, id));
  const names = await namesOf(env, [task]);
  print({ task }, () => taskText(task, names));
}

/** `mcpx tasks cancel ID`: the server is asked to cancel it, and it ends `cancelled`. */
export async function tasksCancel(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  needNats(env, 'mcpx tasks');
  const id = taskId(args);
  const task = await withTasks(env, (tasks, account) => tasks.cancelTask(account, id));
  print({ task }, () => `task ${task.id}: ${task.state}`);
}

/** `mcpx tasks result ID`: a finished task's result, printed as `mcpx call` prints one. */
export async function tasksResult(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  needNats(env, 'mcpx tasks');
  const id = taskId(args);
  const result = await withTasks(env, (tasks, account) => tasks.taskResult(account, id));
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
