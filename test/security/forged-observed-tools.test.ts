import { describe, expect, it } from 'vitest';
import { encodePayload, type RedactedMcpServer, type ToolsObserved } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { approvalSystemPerSuite, stoppedCall } from '../approvals/approval-tools.js';

/**
 * Quiet discovery trusts a proxy's tool list — and anyone who can publish on
 * `mcp.proxy.tools.observed` can send one. A list that strips `destructiveHint` would lower
 * `drop_table` from always_ask to act in the registry's own records, the very records the proxy
 * takes levels from: the destructive tool would then run with no human. The registry must not
 * record such a list on the bus' word; it lists the server itself, and keeps what the server says.
 */
describe('a forged tools-observed message', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started));

  const db = async (): Promise<RedactedMcpServer> => {
    const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    const found = servers.find((s) => s.name === 'db');
    if (found === undefined) throw new Error('no server db');
    return found;
  };
  const forge = async (tools: ToolsObserved['tools']): Promise<void> => {
    const forged: ToolsObserved = { account: system.account, server: 'db', tools, transport: 'http' };
    // A plain core publish, as any client of the bus can send.
    system.nc.publish(system.subjects.toolsObserved, encodePayload(forged));
    await system.nc.flush();
  };
  const stripped: ToolsObserved['tools'] = [
    {
      name: 'drop_table',
      description: 'Drop a table.',
      inputSchema: { type: 'object', properties: { table: { type: 'string' } }, required: ['table'] },
    },
    {
      name: 'add',
      description: 'Add two numbers.',
      inputSchema: { type: 'object' },
      annotations: { readOnlyHint: true },
    },
    { name: 'echo', description: 'Echo.', inputSchema: { type: 'object' } },
  ];

  it('that strips destructiveHint is not recorded: the registry lists the server itself, and the call still stops for a human', async () => {
    const before = await db();
    expect(before.tools.find((t) => t.name === 'drop_table')).toMatchObject({
      permission: 'always_ask',
      inheritedPermission: 'always_ask',
    });
    await stoppedCall(system, 'agent', 'warm', 'db__drop_table', { table: 'warm' });
    const checkedAt = before.status.checkedAt;

    await forge(stripped);
    // The registry ran a discovery of its own (a new check), rather than record the list.
    const after = await eventually(
      async () => {
        const s = await db();
        return s.status.checkedAt !== checkedAt ? s : undefined;
      },
      20_000,
      "the registry's own discovery",
    );
    expect(after.status.state).toBe('ok');
    expect(after.tools.find((t) => t.name === 'drop_table')).toMatchObject({
      permission: 'always_ask',
      inheritedPermission: 'always_ask',
    });

    // The destructive tool still stops for a human, and the server was not called.
    const calls = upstream.stats.calls;
    const err = await system.callError('agent', 'f1', 'db__drop_table', { table: 'users' });
    expect(err.code).toBe('approval_required');
    expect(upstream.stats.calls).toBe(calls);

    // A flood of the same forgery changes nothing either (held back: at most one listing per server a while).
    for (let i = 0; i < 20; i++) await forge(stripped);
    const again = await system.callError('agent', 'f2', 'db__drop_table', { table: 'users' });
    expect(again.code).toBe('approval_required');
    expect((await db()).tools.find((t) => t.name === 'drop_table')).toMatchObject({ permission: 'always_ask' });

    // Nothing else broke: an act tool runs, and an approved destructive call runs once.
    expect((await system.call('agent', 'f3', 'db__add', { a: 2, b: 3 })).result.text).toBe('5');
    const id = await stoppedCall(system, 'agent', 'f4', 'db__drop_table', { table: 'logs' });
    await system.api.act('ApproveToolCall', { approvalId: id });
    expect(
      (await system.call('agent', 'f4', 'db__drop_table', { table: 'logs' }, { approvalId: id })).result.text,
    ).toBe('dropped logs');
    expect(upstream.stats.calls).toBe(calls + 2);
  });
});
