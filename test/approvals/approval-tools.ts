import { WireError } from '@mcpx/contracts';
import { addTool, echoTool, type TestTool } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';

/** `drop_table {table}`: a tool its server marks destructive (inherits always_ask). */
export function dropTool(): TestTool {
  return {
    name: 'drop_table',
    description: 'Drop a table.',
    inputSchema: { type: 'object', properties: { table: { type: 'string' } }, required: ['table'] },
    annotations: { destructiveHint: true },
    handler: (args) => ({ content: [{ type: 'text', text: `dropped ${String(args['table'])}` }] }),
  };
}

/** drop_table (destructive), add (read-only), echo (no hints). */
export function approvalTools(): TestTool[] {
  return [dropTool(), addTool(), echoTool()];
}

/** The approval id of a call that stopped for a human (fails the test otherwise). */
export async function stoppedCall(system: ProxySystem, agent: string, run: string, tool: string, args: Record<string, unknown>): Promise<string> {
  const err = await system.callError(agent, run, tool, args);
  if (err.code !== 'approval_required') throw new Error(`expected approval_required, got ${err.code}: ${err.message}`);
  const id = err.details.approvalId;
  if (typeof id !== 'string') throw new Error('approval_required without an approvalId');
  return id;
}

/** The typed error of an action (fails the test if it succeeds). */
export async function actionError(p: Promise<unknown>): Promise<WireError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error('the action succeeded, an error was expected');
}
