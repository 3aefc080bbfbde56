// `mcpx call` and `mcpx runs end`: through the signed HTTP API (InvokeTool, EndRun), so a user
// needs no NATS credentials; operators holding the runtime's NATS credentials may go over NATS
// instead (`--nats URL`, or MCPX_NATS_URL).
import { randomUUID } from 'node:crypto';
import { ErrorCodes, WireError, type CallProgress } from '@mcpx/contracts';
import { UsageError, flag, need, type ParsedArgs, type Print } from './args.js';
import { loadRuns, readKey, saveRuns, act, withProxy, type CliEnv } from './client.js';
import type { KeyPair } from '@mcpx/envelope';
import { terminalText } from './terminal-text.js';
import { renderResult } from './result-summary.js';
import type { ProxyResult } from '@mcpx/domain';
import { questionLines } from './input-commands.js';
import { inputRequiredOf, type InputRequired } from '@mcpx/proxy-client';
import { waitForTask } from './task-commands.js';

interface CallRequest {
  agentRef: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The run the user named, if any. */
  givenRun: string | undefined;
  timeoutMs: number | undefined;
  approvalId: string | undefined;
  waitSeconds: number | undefined;
  /** `--input ID`: re-send a call whose server's question was answered. */
  inputRequestId: string | undefined;
  /** `--wait-input SECONDS`: wait for a person to answer the server's questions, every round. */
  waitInputSeconds: number | undefined;
  /** Progress lines on stderr while the call runs (not under `--json`). */
  showProgress: boolean;
  /** `--task`: ask for a task-augmented call of an `optional` tool (a `required` one's always is). NATS mode only. */
  task: boolean;
  /** `--no-wait`: a call answered with a task handle prints the handle instead of waiting for the task. */
  noWait: boolean;
}

function parseCall(args: ParsedArgs): CallRequest {
  const agentRef = flag(args, 'agent');
  if (agentRef === undefined) throw new UsageError('--agent AGENT is required');
  const tool = need(args, 1, 'TOOL');
  let parsed: unknown;
  try {
    parsed = JSON.parse(args.positionals[2] ?? '{}');
  } catch {
    throw new UsageError('the arguments must be a JSON object, e.g. \'{"text":"hi"}\'');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new UsageError('the arguments must be a JSON object');
  const timeout = flag(args, 'timeout-ms');
  const timeoutMs = timeout === undefined ? undefined : Number(timeout);
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0))
    throw new UsageError('--timeout-ms takes a positive number of milliseconds');
  const waitFlag = flag(args, 'wait-approval');
  const waitSeconds = waitFlag === undefined ? undefined : Number(waitFlag);
  if (waitSeconds !== undefined && !(Number.isFinite(waitSeconds) && waitSeconds > 0 && waitSeconds <= 3600))
    throw new UsageError('--wait-approval takes seconds, 1 to 3600');
  const waitInputFlag = flag(args, 'wait-input');
  const waitInputSeconds = waitInputFlag === undefined ? undefined : Number(waitInputFlag);
  if (
    waitInputSeconds !== undefined &&
    !(Number.isFinite(waitInputSeconds) && waitInputSeconds > 0 && waitInputSeconds <= 3600)
  )
    throw new UsageError('--wait-input takes seconds, 1 to 3600');
  return {
    agentRef,
    tool,
    arguments: parsed as Record<string, unknown>,
    givenRun: flag(args, 'run'),
    timeoutMs,
    approvalId: flag(args, 'approval'),
    waitSeconds,
    inputRequestId: flag(args, 'input'),
    waitInputSeconds,
    showProgress: flag(args, 'json') !== 'true',
    task: flag(args, 'task') === 'true',
    noWait: flag(args, 'no-wait') === 'true',
  };
}

/** One line per progress event of the server's: `progress 2/5: copying` (its text made safe for a terminal). */
export function progressLine(p: CallProgress): string {
  const amount = p.total !== undefined ? `${p.progress}/${p.total}` : String(p.progress);
  return terminalText(`progress ${amount}${p.message !== undefined && p.message !== '' ? `: ${p.message}` : ''}`);
}

const showProgress = (p: CallProgress): void => void process.stderr.write(`${progressLine(p)}\n`);

const approvalOf = (err: unknown): { approvalId: string; run: string | undefined } | undefined => {
  if (
    !(err instanceof WireError) ||
    err.code !== ErrorCodes.approvalRequired ||
    typeof err.details.approvalId !== 'string'
  )
    return undefined;
  return { approvalId: err.details.approvalId, run: typeof err.details.run === 'string' ? err.details.run : undefined };
};

const hint = (seconds: number, id: string): void =>
  void process.stderr.write(
    terminalText(`waiting up to ${seconds} s for a human to approve ${id} (mcpx approvals approve ${id})\n`),
  );

/** What a waiting `mcpx call` tells the person: the server's question, its id, and how to answer it. */
const inputHint = (seconds: number, r: InputRequired): void => {
  const lines = [
    `${r.tool} asks (input request ${r.inputRequestId}, round ${r.round}):`,
    ...r.requests.flatMap(questionLines),
    `waiting up to ${seconds} s for an answer (mcpx inputs answer ${r.inputRequestId} …)`,
  ];
  process.stderr.write(terminalText(`${lines.join('\n')}\n`));
};

/** How often the HTTP path re-sends a call waiting for a human (a re-send of an undecided approval runs nothing). */
const APPROVAL_POLL_MS = 2_000;

/** One call through InvokeTool; with `--wait-approval`, re-sent with the approval until a human decides. */
async function callOverHttp(
  env: CliEnv,
  key: KeyPair,
  req: CallRequest,
): Promise<{ result: ProxyResult; run: string }> {
  const invoke = (
    run: string | undefined,
    approvalId: string | undefined,
    inputRequestId = req.inputRequestId,
  ): Promise<{ result: ProxyResult; run: string }> =>
    act(env, key, 'InvokeTool', {
      agent: req.agentRef,
      tool: req.tool,
      arguments: req.arguments,
      ...(run !== undefined ? { run } : {}),
      ...(approvalId !== undefined ? { approvalId } : {}),
      ...(inputRequestId !== undefined ? { inputRequestId } : {}),
      ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
    });
  try {
    return await invoke(req.givenRun, req.approvalId);
  } catch (err) {
    const asked = inputRequiredOf(err);
    if (asked !== undefined && req.waitInputSeconds !== undefined)
      return await waitForInput(req, asked, err, (run, id) => invoke(run, req.approvalId, id), env, key);
    const pending = approvalOf(err);
    if (pending === undefined || req.waitSeconds === undefined || req.approvalId !== undefined) throw err;
    hint(req.waitSeconds, pending.approvalId);
    // The approval is bound to the run it stopped in: re-send in that run, then end it if it was not the user's.
    const run = pending.run ?? req.givenRun;
    const deadline = Date.now() + req.waitSeconds * 1000;
    try {
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) throw err;
        await new Promise((r) => setTimeout(r, Math.min(APPROVAL_POLL_MS, left)));
        try {
          return await invoke(run, pending.approvalId);
        } catch (again) {
          if (approvalOf(again) === undefined) throw again;
        }
      }
    } finally {
      if (req.givenRun === undefined && run !== undefined)
        await act(env, key, 'EndRun', { run }).catch(() => undefined);
    }
  }
}

/**
 * `--wait-input`: shows the server's question, re-sends the call with its input request every
 * {@link APPROVAL_POLL_MS} (a re-send of an unanswered request runs nothing) until it is answered,
 * and does the same for every further round, up to `--wait-input` seconds in all.
 */
async function waitForInput(
  req: CallRequest,
  first: InputRequired,
  firstErr: unknown,
  invoke: (run: string | undefined, inputRequestId: string) => Promise<{ result: ProxyResult; run: string }>,
  env: CliEnv,
  key: KeyPair,
): Promise<{ result: ProxyResult; run: string }> {
  const seconds = req.waitInputSeconds ?? 0;
  const deadline = Date.now() + seconds * 1000;
  let asked = first;
  let last = firstErr;
  const run = asked.run ?? req.givenRun;
  inputHint(seconds, asked);
  try {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw last;
      await new Promise((r) => setTimeout(r, Math.min(APPROVAL_POLL_MS, left)));
      try {
        return await invoke(run, asked.inputRequestId);
      } catch (again) {
        const next = inputRequiredOf(again);
        if (next === undefined) throw again;
        last = again;
        if (next.inputRequestId !== asked.inputRequestId) {
          asked = next;
          inputHint(Math.max(1, Math.round((deadline - Date.now()) / 1000)), asked);
        }
      }
    }
  } finally {
    if (req.givenRun === undefined && run !== undefined) await act(env, key, 'EndRun', { run }).catch(() => undefined);
  }
}

/** The operators' path: the call over NATS with the runtime's credentials; sticky instances persist per key file. */
async function callOverNats(
  env: CliEnv,
  key: KeyPair,
  req: CallRequest,
): Promise<{ result: ProxyResult; run: string; instance: string }> {
  const { agent } = await act(env, key, 'GetAgent', { agent: req.agentRef });
  const run = req.givenRun ?? `cli-${randomUUID()}`;
  return await withProxy(env, async (proxy) => {
    const runs = req.givenRun ? await loadRuns(env) : {};
    const sticky = runs[run];
    if (sticky) proxy.stick(run, sticky);
    const input = {
      account: key.principal,
      agent: agent.id,
      run,
      tool: req.tool,
      arguments: req.arguments,
      ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
      ...(req.approvalId !== undefined ? { approvalId: req.approvalId } : {}),
      ...(req.inputRequestId !== undefined ? { inputRequestId: req.inputRequestId } : {}),
      ...(req.task ? { task: true } : {}),
      // The server's progress, heard while the call runs (the HTTP path's InvokeTool answers once, at the end).
      ...(req.showProgress ? { onProgress: showProgress } : {}),
    };
    try {
      const waitSeconds = req.waitSeconds;
      const waitInput = req.waitInputSeconds;
      const outcome =
        waitInput !== undefined
          ? await proxy.callAwaitingInput(input, {
              waitMs: waitInput * 1000,
              pollMs: APPROVAL_POLL_MS,
              onInputRequired: (r) => inputHint(Math.max(1, waitInput), r),
            })
          : waitSeconds === undefined
            ? await proxy.call(input)
            : await proxy.callAwaitingApproval(input, {
                waitMs: waitSeconds * 1000,
                onApprovalRequired: (id) => hint(waitSeconds, id),
              });
      return { result: outcome.result, run, instance: outcome.instance };
    } catch (err) {
      // An approval is bound to the run: the re-sent call must name the same one.
      if (
        err instanceof WireError &&
        (err.code === ErrorCodes.approvalRequired || err.code === ErrorCodes.inputRequired)
      )
        throw new WireError(err.code, err.message, { ...err.details, run });
      throw err;
    } finally {
      const instance = proxy.instanceOf(run);
      if (req.givenRun === undefined) await proxy.endRun(key.principal, run);
      else if (instance !== undefined && instance !== sticky) await saveRuns(env, { ...runs, [run]: instance });
    }
  });
}

export async function call(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const req = parseCall(args);
  // InvokeTool has no way to ask for a task (a required tool's call is one anyway; the wait reads the task actions).
  if (req.task && !env.viaNats)
    throw new UsageError(
      "--task goes over NATS (--nats URL with the runtime's credentials); through the API only a tool whose task support is required runs as a task",
    );
  const key = await readKey(env.keyFile);
  const outcome = env.viaNats ? await callOverNats(env, key, req) : await callOverHttp(env, key, req);
  const extra = { run: outcome.run, ...('instance' in outcome ? { instance: outcome.instance } : {}) };
  const handle = outcome.result.task;
  if (handle === undefined || req.noWait) {
    print(
      { ...outcome.result, ...extra },
      () => renderResult(outcome.result) + (handle !== undefined ? `\n${taskHint(handle.id)}` : ''),
    );
    return;
  }
  // The call outlived its bound as a task: wait for it (its status on stderr), then print its result as the call's.
  const result = await waitForTask(env, handle, req.showProgress);
  print({ ...result, ...extra, taskId: handle.id }, () => renderResult(result));
}

/** What a person does with a handle: read, cancel or take the result (`mcpx tasks`, through the API or over NATS). */
function taskHint(id: string): string {
  return `mcpx tasks show ${id} | mcpx tasks result ${id} | mcpx tasks cancel ${id}`;
}

export async function runsEnd(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const run = need(args, 2, 'RUN');
  const key = await readKey(env.keyFile);
  if (env.viaNats) {
    await withProxy(env, (proxy) => proxy.endRun(key.principal, run));
    const runs = await loadRuns(env);
    if (run in runs) {
      delete runs[run];
      await saveRuns(env, runs);
    }
  } else {
    await act(env, key, 'EndRun', { run });
  }
  print({ run, ended: true }, () => `ended run ${run}`);
}
