// `mcpx approvals list|approve|deny`: always_ask calls waiting for the owner.
import type { ApprovalView } from '@mcpx/contracts';
import { need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';
import { waitingCallsText } from './agent-names.js';

/** One pending approval with its whole canonical arguments: what is shown is what is approved. */
function approvalLine(a: ApprovalView, names: ReadonlyMap<string, string>): string {
  // The registry answers them canonical, as kept for display (every object's keys sorted): shown as they came.
  const args =
    a.arguments === undefined ? '(too large to show: this call can only be denied)' : JSON.stringify(a.arguments);
  return `${a.id}  ${a.tool}  run ${a.run}  agent ${names.get(a.agent) ?? a.agent}  expires ${a.expiresAt}\n  arguments: ${args}`;
}

/** `mcpx approvals list`: the calls waiting for the owner's approval, oldest first. */
export async function approvalsList(env: CliEnv, _args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListApprovals');
  print(res, await waitingCallsText(env, key, res.approvals, 'no calls are waiting for approval', approvalLine));
}

export function decideApproval(
  type: 'ApproveToolCall' | 'DenyToolCall',
): (env: CliEnv, args: ParsedArgs, print: Print) => Promise<void> {
  return async (env, args, print) => {
    const approvalId = need(args, 2, 'ID');
    const { approval } = await act(env, await readKey(env.keyFile), type, { approvalId });
    print(approval, () =>
      approval.status === 'approved'
        ? `approved ${approval.id}: re-send the call with --run ${approval.run} --approval ${approval.id}`
        : `denied ${approval.id}`,
    );
  };
}
