/** What a call held for a person carries, an approval's or an input request's alike. */
export interface HeldCall {
  id: string;
  agent: string;
  run: string;
  tool: string;
  server: string;
  remoteName: string;
}

/**
 * The first fields of an approval's and an input request's view: which call of which agent waits,
 * on which server's tool. Each view adds its own after them.
 */
export function heldCallView(r: HeldCall): HeldCall {
  return { id: r.id, agent: r.agent, run: r.run, tool: r.tool, server: r.server, remoteName: r.remoteName };
}
