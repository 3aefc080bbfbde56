import { randomUUID } from 'node:crypto';
import { ENDPOINT_RUN_PREFIX, ErrorCodes, WireError, invalidInput } from '@mcpx/contracts';
import { findAgent } from './agents.actions.js';
import type { AgentsAction } from './agents-deps.js';

/** The proxy's own cap on a call's timeout. */
const MAX_TIMEOUT_MS = 600_000;

/** A run id (its grammar is the action map's): never one of the endpoint's. */
function runField(value: string): string {
  // The endpoint's runs carry its token holders' approvals: no signer calls in (or ends) one.
  if (value.startsWith(ENDPOINT_RUN_PREFIX))
    throw invalidInput('run', `must not start with ${ENDPOINT_RUN_PREFIX}: those runs are the agent endpoint's`);
  return value;
}

/**
 * `InvokeTool {agent, tool, arguments?, run?, approvalId?, inputRequestId?, timeoutMs?}` → `{result, run}`: one call
 * through the proxy as the signer's account, so a user's CLI needs no NATS. Without `run` the call
 * gets a run of its own, ended at once; with `run` the run stays open (its connections pooled for
 * the next call) until `EndRun`. `approvalId` re-sends a call a human approved (the run must be
 * the one the approval names); `inputRequestId` re-sends a call whose server's question a person
 * answered (its run too). The person answers; the registry never answers for the runtime.
 */
export const invokeTool: AgentsAction<'InvokeTool'> = async (deps, caller, action) => {
  const agent = await findAgent(deps, caller.account, action.agent);
  const args = action.arguments ?? {};
  const named = action.run !== undefined;
  const run = action.run !== undefined ? runField(action.run) : `palette-${randomUUID()}`;
  // A named run remembers the agents it carried: an AGENT signer's EndRun is checked against them.
  if (named) await deps.runAgents?.record(caller.account, run, agent.id);
  const { approvalId, inputRequestId, timeoutMs } = action;
  if (timeoutMs !== undefined && (timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS))
    throw invalidInput('timeoutMs', `must be a number of milliseconds, at most ${MAX_TIMEOUT_MS}`);
  // A legacy server that asked a question holds its request on the run's session: the run stays
  // open for the re-sent call (it names the run; an abandoned one is closed when it goes idle).
  let keepRun = false;
  try {
    const { result } = await deps.proxy.call({
      account: caller.account,
      agent: agent.id,
      run,
      tool: action.tool,
      arguments: args,
      ...(approvalId !== undefined ? { approvalId } : {}),
      ...(inputRequestId !== undefined ? { inputRequestId } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    return { result, run };
  } catch (err) {
    // The approval is bound to this run: the re-sent call must name it.
    // So is an input request: the call that goes on with the answers must name the run.
    if (err instanceof WireError && err.code === ErrorCodes.inputRequired) keepRun = true;
    if (err instanceof WireError && (err.code === ErrorCodes.approvalRequired || err.code === ErrorCodes.inputRequired))
      throw new WireError(err.code, err.message, { ...err.details, run });
    throw err;
  } finally {
    if (!named && !keepRun) await deps.proxy.endRun(caller.account, run);
  }
};

/**
 * `EndRun {run}` → `{run, ended: true}`: every proxy instance closes the run's connections. The
 * registry publishes `mcp.runs.ended.<acct>.<run>` for the signer's own account only, so a user
 * ends their runs without NATS credentials and cannot end another account's. An AGENT signer
 * ends only a run whose every call through the registry was of an agent it is bound to: a run
 * of another agent, or one the registry never carried (started over NATS, or long ago), is
 * `forbidden` on `run`, and nothing is ended.
 */
export const endRun: AgentsAction<'EndRun'> = async (deps, caller, action) => {
  const run = runField(action.run);
  if (caller.role === 'AGENT') {
    const [bound, agents] = await Promise.all([
      deps.accounts.boundAgents(caller.account, caller.signer),
      deps.runAgents?.agents(caller.account, run) ?? Promise.resolve([]),
    ]);
    if (agents.length === 0 || agents.some((a) => !bound.includes(a))) {
      throw new WireError(ErrorCodes.forbidden, 'run: an AGENT signer ends only runs of the agents it is bound to', {
        field: 'run',
      });
    }
  }
  await deps.proxy.endRun(caller.account, run);
  await deps.runAgents?.forget(caller.account, run);
  return { run, ended: true };
};
