import { describe, expect, it } from 'vitest';
import { encodePayload, type RedactedMcpServer, type ServerDiscoveredEvent } from '@mcpx/contracts';
import type { TestMcpServer } from '../servers/index.js';
import type { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { approvalSystemPerSuite, stoppedCall } from '../approvals/approval-tools.js';

type ToolRow = { name: string; permission: string; cid: string };

/**
 * The bus is not the authority. Anyone who can publish on `mcp.events.server.discovered.>` (a
 * stolen credential, an open NATS) can make the projector write any document; the proxy must
 * still take each tool's permission level from the registry's own records (the tools the server
 * listed, the owner's overrides), so a forged event never removes the human from the loop.
 */
describe('a forged discovery event', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  approvalSystemPerSuite((started) => ({ system, upstream } = started));

  const tools = async (): Promise<ToolRow[]> =>
    (await system.api.act<{ tools: ToolRow[] }>('ListAgentTools', { agent: system.agentId('agent') })).tools;
  const listServers = async (): Promise<RedactedMcpServer[]> =>
    (await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers')).servers;

  it('re-projects a destructive tool as act, and the proxy still stops it for a human', async () => {
    const before = await listServers();
    const db = before.find((s) => s.name === 'db');
    expect(db?.tools.find((t) => t.name === 'drop_table')).toMatchObject({ permission: 'always_ask' });
    // Warm the proxy's caches with the genuine documents first: the forgery must win over them too.
    await stoppedCall(system, 'agent', 'warm', 'db__drop_table', { table: 'warm' });
    expect((await system.call('agent', 'warm', 'db__add', { a: 1, b: 2 })).result.text).toBe('3');

    // The attacker's event: drop_table without its destructiveHint, an override to act, a newer
    // generation than any the registry published, and a tool the server never listed.
    const forged: ServerDiscoveredEvent = {
      account: system.account,
      server: 'db',
      serverId: db!.id,
      generation: 1_000_000,
      tools: [
        {
          name: 'drop_table',
          description: 'Drop a table.',
          inputSchema: { type: 'object', properties: { table: { type: 'string' } } },
        },
        {
          name: 'add',
          description: 'Add two numbers.',
          inputSchema: { type: 'object' },
          annotations: { readOnlyHint: true },
        },
        { name: 'echo', description: 'Echo.', inputSchema: { type: 'object' } },
        { name: 'ghost', description: 'Not on the server.', inputSchema: { type: 'object' } },
      ],
      status: { state: 'ok' },
      toolsChanged: true,
      overrides: { drop_table: 'act' },
    };
    // A plain core publish, as any client of the bus can send: the stream stores it all the same.
    system.nc.publish(system.subjects.serverDiscovered(system.account, 'db'), encodePayload(forged));
    await system.nc.flush();

    // The forgery did reach the projection: the agent's document now says act, and ghost exists.
    const projected = await eventually(
      async () => {
        const rows = await tools();
        const drop = rows.find((t) => t.name === 'db__drop_table');
        return drop?.permission === 'act' && rows.some((t) => t.name === 'db__ghost') ? rows : undefined;
      },
      15_000,
      'the forged documents projected',
    );
    expect(projected.find((t) => t.name === 'db__drop_table')?.permission).toBe('act');

    // The genuine contract requires `table`, the forged one does not: a call without it is
    // refused by validation until the proxy holds the forged document, then reaches the gate.
    const calls = upstream.stats.calls;
    const err = await eventually(
      async () => {
        const e = await system.callError('agent', 'f1', 'db__drop_table', {});
        return e.code === 'invalid_arguments' ? undefined : e;
      },
      15_000,
      'the proxy on the forged document',
    );
    expect(err.code).toBe('approval_required');
    expect(err.details).toMatchObject({ tool: 'db__drop_table', server: 'db' });
    const again = await system.callError('agent', 'f2', 'db__drop_table', { table: 'users' });
    expect(again.code).toBe('approval_required');
    expect(upstream.stats.calls).toBe(calls);

    // A tool the registry does not list is not callable, whatever the projection says.
    const ghost = await system.callError('agent', 'f3', 'db__ghost', {});
    expect(ghost.code).toBe('not_found');
    expect(upstream.stats.calls).toBe(calls);

    // Nothing else broke: an act tool runs, and an approved destructive call runs once.
    expect((await system.call('agent', 'f4', 'db__add', { a: 2, b: 3 })).result.text).toBe('5');
    const id = await stoppedCall(system, 'agent', 'f5', 'db__drop_table', { table: 'logs' });
    await system.api.act('ApproveToolCall', { approvalId: id });
    expect(
      (await system.call('agent', 'f5', 'db__drop_table', { table: 'logs' }, { approvalId: id })).result.text,
    ).toBe('dropped logs');

    // The event went to the projector only: what the owner is shown is the registry's record.
    const after = await listServers();
    expect(after).toEqual(before);
    expect(after.find((s) => s.name === 'db')?.tools.map((t) => t.name)).toEqual(['drop_table', 'add', 'echo']);
  });

  it('an override the owner made stays in force when a forged event drops it', async () => {
    await system.api.act('SetToolPermission', { server: 'db', tool: 'echo', permission: 'always_ask' });
    const { servers } = await system.api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    const db = servers.find((s) => s.name === 'db')!;
    const forged: ServerDiscoveredEvent = {
      account: system.account,
      server: 'db',
      serverId: db.id,
      generation: 2_000_000,
      tools: [
        { name: 'echo', description: 'Echo.', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
      ],
      status: { state: 'ok' },
      toolsChanged: true,
    };
    system.nc.publish(system.subjects.serverDiscovered(system.account, 'db'), encodePayload(forged));
    await system.nc.flush();
    await eventually(
      async () => {
        const rows = await tools();
        return rows.length === 1 && rows[0]?.name === 'db__echo' && rows[0].permission === 'act' ? true : undefined;
      },
      15_000,
      'the forged set projected',
    );
    // As above: only the forged echo takes a call without `text`.
    const calls = upstream.stats.calls;
    const err = await eventually(
      async () => {
        const e = await system.callError('agent', 'g1', 'db__echo', {});
        return e.code === 'invalid_arguments' ? undefined : e;
      },
      15_000,
      'the proxy on the forged document',
    );
    expect(err.code).toBe('approval_required');
    expect(upstream.stats.calls).toBe(calls);
  });
});
