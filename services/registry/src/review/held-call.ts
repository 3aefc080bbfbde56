import type { ApprovalView, InputRequestView } from '@mcpx/contracts';

/** What a call held for a person carries in both views, an approval's and an input request's. */
type HeldCall = Pick<ApprovalView & InputRequestView, 'id' | 'agent' | 'run' | 'tool' | 'server' | 'remoteName'>;

/**
 * The first fields of an approval's and an input request's view: which call of which agent waits,
 * on which server's tool. Each view adds its own after them.
 */
export function heldCallView(r: HeldCall): HeldCall {
  return { id: r.id, agent: r.agent, run: r.run, tool: r.tool, server: r.server, remoteName: r.remoteName };
}
