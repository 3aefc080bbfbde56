import { afterAll, beforeAll } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { addTool, echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem, type ProxySystemOptions } from '../support/proxy-system.js';

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

/**
 * A ProxySystem (`opts` as ProxySystem.start takes them) and a test server of approvalTools() in
 * `era` (default legacy), set as server `db` and granted to `agent` (default `agent`) once its
 * three tools are projected. If the server or the agent cannot be set, both are stopped before the
 * error is thrown.
 */
export async function startApprovalSystem(
  opts: ProxySystemOptions & { agent?: string; era?: 'modern' | 'dual' | 'legacy' } = {},
): Promise<{ system: ProxySystem; upstream: TestMcpServer }> {
  const { agent = 'agent', era = 'legacy', ...systemOpts } = opts;
  const [system, upstream] = await Promise.all([
    ProxySystem.start(systemOpts),
    startTestMcpServer({ era, tools: approvalTools() }),
  ]);
  try {
    await system.setServer('db', upstream.url);
    await system.createAgent(agent, ['db'], 3);
  } catch (err) {
    await system.stop();
    await upstream.close();
    throw err;
  }
  return { system, upstream };
}

/**
 * A suite's approval system: started (as {@link startApprovalSystem} with `opts`) before the
 * suite's tests and handed to `use` (the suite keeps it in its own variables), stopped after them.
 */
export function approvalSystemPerSuite(
  use: (started: { system: ProxySystem; upstream: TestMcpServer }) => void,
  opts: Parameters<typeof startApprovalSystem>[0] = {},
): void {
  let started: { system: ProxySystem; upstream: TestMcpServer } | undefined;
  beforeAll(async () => {
    started = await startApprovalSystem(opts);
    use(started);
  });
  afterAll(async () => {
    await started?.system.stop();
    await started?.upstream.close();
  });
}

/** The approval id of a call that stopped for a human (fails the test otherwise). */
export async function stoppedCall(
  system: ProxySystem,
  agent: string,
  run: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<string> {
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
