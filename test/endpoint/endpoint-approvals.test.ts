import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import type { TestMcpServer } from '../servers/index.js';
import { connectAgentClient, errorOf, startEndpointApprovalSystem, type EndpointSystem } from './endpoint-harness.js';

/**
 * Approvals and limits through the endpoint: an always_ask tool stops for the owner and comes back
 * as a tool result naming the approval; once approved, the same call with the approval in `_meta`
 * runs once. A denied approval is a tool result too.
 */
describe('the agent MCP endpoint: approvals are tool results', () => {
  let sys: EndpointSystem;
  let upstream: TestMcpServer;
  let client: Client;

  beforeAll(async () => {
    ({ sys, upstream } = await startEndpointApprovalSystem());
    client = await connectAgentClient(sys, 'ops', 'approvals');
  }, 120_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await sys?.stop();
    await upstream?.close();
  });

  it('lists the permission level and stops a destructive call for the owner; the approved call runs once', async () => {
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'db__drop_table')?._meta).toMatchObject({ 'io.mcpx/permission': 'always_ask' });
    const before = upstream.stats.calls;
    const stopped = await client.callTool({ name: 'db__drop_table', arguments: { table: 'users' } });
    expect(stopped.isError).toBe(true);
    const err = errorOf(stopped);
    expect(err.code).toBe('approval_required');
    const approvalId = err.details.approvalId as string;
    expect((stopped.content as Array<{ text: string }>)[0]!.text).toContain(approvalId);
    expect(upstream.stats.calls).toBe(before);

    await sys.system.api.act('ApproveToolCall', { approvalId });
    const ran = await client.callTool({
      name: 'db__drop_table',
      arguments: { table: 'users' },
      _meta: { 'io.mcpx/approvalId': approvalId },
    });
    expect(ran.isError).toBeFalsy();
    expect(ran.content).toEqual([{ type: 'text', text: 'dropped users' }]);
    // Used once: a replay is refused, as a tool result.
    const replay = await client.callTool({
      name: 'db__drop_table',
      arguments: { table: 'users' },
      _meta: { 'io.mcpx/approvalId': approvalId },
    });
    expect(replay.isError).toBe(true);
    expect(errorOf(replay).code).toBe('approval_refused');
    expect(upstream.stats.calls).toBe(before + 1);
  });

  it('says a denied approval as approval_refused', async () => {
    const stopped = await client.callTool({ name: 'db__drop_table', arguments: { table: 'orders' } });
    const approvalId = errorOf(stopped).details.approvalId as string;
    await sys.system.api.act('DenyToolCall', { approvalId });
    const denied = await client.callTool({
      name: 'db__drop_table',
      arguments: { table: 'orders' },
      _meta: { 'io.mcpx/approvalId': approvalId },
    });
    expect(denied.isError).toBe(true);
    expect(errorOf(denied)).toMatchObject({ code: 'approval_refused', details: { reason: 'denied' } });
  });
});
