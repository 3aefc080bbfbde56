import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestMcpServer } from '../servers/index.js';
import type { startApprovalEndpoints } from './approval-endpoints.js';
import { INSPECTORS, NODE_22, lastJson, runProcess, type ProcessResult } from './inspector-clis.js';
import { startApprovalEndpointsOnDb } from '../support/fixtures/approval-endpoints.js';

const AI_SDK_CALL = join(dirname(fileURLToPath(import.meta.url)), 'ai-sdk-call.mjs');

function run(args: string[], cwd: string, timeoutMs = 60_000): Promise<ProcessResult> {
  // The workspace's Node 22: the Inspector 2.x and `@ai-sdk/mcp` need it.
  return runProcess(NODE_22, args, { cwd, env: { ...process.env, NO_COLOR: '1' } }, timeoutMs);
}

type Result = { content?: Array<{ type: string; text?: string }>; isError?: boolean; _meta?: Record<string, unknown> };
type ErrorMeta = { code: string; details: Record<string, unknown> };
const errorOf = (r: Result): ErrorMeta | undefined => r._meta?.['io.mcpx/error'] as ErrorMeta | undefined;

/**
 * The "done when": ordinary MCP clients of other projects, which cannot set the
 * connector's `_meta`, finish an always_ask call. The MCP Inspector's 2.x command-line client and
 * the AI SDK's MCP client (`@ai-sdk/mcp`, through the tool an AI SDK agent is given) call it
 * through the endpoint, get the refusal naming the approval and the console link, the owner
 * approves it with the console's signed action (`ApproveToolCall`), the client re-sends the same
 * call as it did the first time, and it runs once.
 */
describe('approvals any client can finish: the Inspector CLI 2.x and the AI SDK', () => {
  let stack: Awaited<ReturnType<typeof startApprovalEndpoints>>;
  let upstream: TestMcpServer;
  let token: string;

  beforeAll(async () => {
    ({ stack, upstream } = await startApprovalEndpointsOnDb());
    ({ token } = await stack.system.api.act<{ token: string }>('CreateAgentToken', { agent: 'ops', name: 'clients' }));
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  const clients: Record<string, (table: string) => Promise<Result>> = {
    'inspector 2.x': async (table) => {
      const { bin, mode } = INSPECTORS['inspector 2.x'];
      const url = `${stack.endpoints.lean.url}/v1/agents/ops/mcp`;
      const out = await run(
        [
          bin,
          ...mode,
          url,
          '--transport',
          'http',
          '--header',
          `Authorization: Bearer ${token}`,
          '--method',
          'tools/call',
          '--tool-name',
          'db__drop_table',
          '--tool-arg',
          `table=${table}`,
        ],
        dirname(bin),
      );
      // It prints the result either way, and exits 5 (`tool_is_error`) for an isError result.
      const result = lastJson(out.stdout) as Result;
      expect(out.code, out.stderr).toBe(result.isError === true ? 5 : 0);
      return result;
    },
    '@ai-sdk/mcp': async (table) => {
      const url = `${stack.endpoints.sdk.url}/v1/agents/ops/mcp`;
      const out = await run(
        [AI_SDK_CALL, url, token, 'db__drop_table', JSON.stringify({ table })],
        dirname(AI_SDK_CALL),
      );
      expect(out.code, out.stderr).toBe(0);
      return JSON.parse(out.stdout) as Result;
    },
  };

  it.each(Object.keys(clients))(
    '%s: stopped for the owner, approved in the console, the same call re-sent runs once',
    async (which) => {
      const call = clients[which]!;
      const table = `done-${which.replace(/[^a-z0-9]/gi, '')}`;
      const before = upstream.stats.calls;
      const stopped = await call(table);
      expect(stopped.isError).toBe(true);
      expect(errorOf(stopped)?.code).toBe('approval_required');
      const approvalId = errorOf(stopped)?.details.approvalId as string;
      expect(stopped.content?.[0]?.text).toContain(`${stack.consoleUrl}/?approval=${approvalId}#approvals`);
      expect(upstream.stats.calls).toBe(before);

      // The owner approves it as the console does: the signed ApproveToolCall action.
      await stack.system.api.act('ApproveToolCall', { approvalId });

      const ran = await call(table);
      expect(ran.isError).toBeFalsy();
      expect(ran.content).toEqual([{ type: 'text', text: `dropped ${table}` }]);
      expect(upstream.stats.calls).toBe(before + 1);

      // Once: the next re-send stops again, for a new approval.
      const again = await call(table);
      expect(errorOf(again)?.code).toBe('approval_required');
      expect(errorOf(again)?.details.approvalId).not.toBe(approvalId);
      expect(upstream.stats.calls).toBe(before + 1);
    },
    180_000,
  );
});
