import { ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveStatelessMcp } from '../servers/stateless-mcp.js';
import { TASKS_EXTENSION } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';

interface Stats {
  runs: number;
  connections: number;
}

/**
 * A modern server that declares the tasks extension but whose task-augmented calls fail: `refused`
 * refuses to create the task (a JSON-RPC error), `stalls` never answers (the call bound ends it),
 * `plain` answers at once without a task.
 */
async function startRefusingUpstream(): Promise<{ url: string; calls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const stalled: (() => void)[] = [];
  const factory = (): Server => {
    const server = new Server(
      { name: 'mcpx-refusing-tasks', version: '0.1.0' },
      { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } },
    );
    server.setRequestHandler(
      'tools/list',
      () =>
        ({
          tools: ['refused', 'stalls', 'plain'].map((name) => ({
            name,
            description: `A task tool that is ${name}.`,
            inputSchema: { type: 'object', properties: {} },
          })),
          ttlMs: 0,
          cacheScope: 'public',
        }) as never,
    );
    server.setRequestHandler('tools/call', async (request) => {
      calls++;
      const name = request.params.name;
      if (name === 'refused') throw new ProtocolError(ProtocolErrorCode.InternalError, 'no task can be created now');
      if (name === 'stalls') await new Promise<void>((r) => stalled.push(r));
      return { content: [{ type: 'text', text: `${name} ran at once` }] };
    });
    return server;
  };
  const served = await serveStatelessMcp(factory, 'reject');
  return {
    url: served.url,
    calls: () => calls,
    close: async () => {
      for (const r of stalled.splice(0)) r();
      await served.close();
    },
  };
}

/**
 * A task-augmented call goes out on a pool run of its own (`task-<id>`). When the call fails (its
 * server refuses to create the task, or the call bound ends it), that run ends with the call, as a
 * plain call's own work does: before, it stayed open until the idle sweep (minutes later), 64 to
 * 118 such runs per proxy in the tasks bench. Read from a real proxy process's `/stats`.
 */
describe('a task-augmented call that fails', () => {
  let system: ProxySystem;
  let upstream: Awaited<ReturnType<typeof startRefusingUpstream>>;
  let proxy: ProxyProcess;
  const stats = async (): Promise<Stats> => (await (await fetch(`${proxy.internalUrl}/stats`)).json()) as Stats;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([ProxySystem.start({ proxies: 0 }), startRefusingUpstream()]);
    // A long idle time: only the call's own end can take its run back within the test.
    proxy = await spawnProxyProcess(system, { LOG_LEVEL: 'warn', PROXY_IDLE_MS: '600000' });
    await system.setServer('tasky', upstream.url);
    await system.createAgent('agent', ['tasky'], 1);
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
    await system?.stop();
    await upstream?.close();
  });

  it('refused by its server: the task run is gone when the error comes back', async () => {
    const before = upstream.calls();
    const err = await system.callError('agent', 'r-refused', 'tasky__refused', {}, { task: true });
    expect(err.message).toContain('no task can be created now');
    expect(upstream.calls()).toBe(before + 1);
    expect((await stats()).runs).toBe(0);
    // And so for many: none is left behind.
    for (let i = 0; i < 20; i++)
      await system.callError('agent', `r-refused-${i}`, 'tasky__refused', {}, { task: true });
    expect((await stats()).runs).toBe(0);
  });

  it('ended by the call bound while its server has not answered: the task run is gone too', async () => {
    const before = upstream.calls();
    const err = await system.callError('agent', 'r-stalls', 'tasky__stalls', {}, { task: true, timeoutMs: 1_000 });
    expect(err.code).toBe('timeout');
    expect(upstream.calls()).toBe(before + 1);
    expect((await stats()).runs).toBe(0);
  });

  it('answered at once without a task: its run ends as before, and a plain call keeps its run', async () => {
    const out = await system.call('agent', 'r-plain', 'tasky__plain', {}, { task: true });
    expect(out.result.text).toBe('plain ran at once');
    expect((await stats()).runs).toBe(0);
    // The control: the same tool called plainly keeps the caller's run open until the run ends.
    await system.call('agent', 'r-plain-2', 'tasky__plain', {});
    expect((await stats()).runs).toBe(1);
  });
});
