import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSubjects, type TaskEvent } from '@mcpx/contracts';
import { TaskClient, connectRuntime, type RuntimeConnection } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ApiClient } from '../support/api-client.js';
import { uniqueNamespace } from '../support/env.js';
import { NatsAuthServer } from '../support/nats-auth-server.js';
import { ProcessSystem, eventually } from '../support/system.js';

/**
 * NATS restarted mid-task (docs/tasks.md#faults): the stack's own authorized nats-server is
 * stopped while a task runs and started again on the same port once the task has ended upstream.
 * The proxy polls on (HTTP and Postgres need no NATS), the task ends in its row, and the waiting
 * runtime, reconnected, hears of it (it reads the row again after a reconnection: events sent
 * while it was away are not delivered) and takes the result: nothing is lost.
 */
describe('a task through a NATS restart', { timeout: 180_000 }, () => {
  let nats: NatsAuthServer;
  let system: ProcessSystem;
  let upstream: TasksUpstream;
  let api: ApiClient;
  let runtime: RuntimeConnection;
  let agent: string;
  const prefix = uniqueNamespace().natsPrefix;

  beforeAll(async () => {
    nats = await NatsAuthServer.start({ prefix });
    [system, upstream] = await Promise.all([
      ProcessSystem.start({
        env: { NATS_PREFIX: prefix, TASK_POLL_MIN_MS: '100', TASK_LEASE_MS: '3000' },
        natsEnv: (s) => nats.env(s),
      }),
      startTasksUpstream({ durationMs: 6_000, pollIntervalMs: 200 }),
    ]);
    api = new ApiClient(system.apiUrl);
    await api.act('SetMcpServer', { name: 'modern', config: { url: upstream.url } });
    agent = (
      await api.act<{ agent: { id: string } }>('CreateAgent', {
        name: 'nats-agent',
        definition: { mcpServers: ['modern'] },
      })
    ).agent.id;
    await eventually(
      async () =>
        (await api.act<{ tools: unknown[] }>('ListAgentTools', { agent })).tools.length >= 3 ? true : undefined,
      30_000,
      'the tools projected',
    );
    const { user, pass } = nats.credentials('runtime');
    runtime = await connectRuntime({ url: nats.url, prefix, credentials: { user, pass } });
  }, 120_000);

  afterAll(async () => {
    await runtime?.close();
    await upstream?.close();
    await system?.stop();
    await nats?.stop();
  });

  it('the task ends while NATS is down; after the restart the runtime hears of it once and takes the result', async () => {
    const tasks = new TaskClient(runtime.nc, makeSubjects(prefix));
    const out = await runtime.client.call({
      account: api.principal,
      agent,
      run: 'nr-1',
      tool: 'modern__long-export',
      arguments: { format: 'json' },
      task: true,
      timeoutMs: 2_000,
    });
    const id = out.result.task!.id;
    const events: TaskEvent[] = [];
    const waiting = tasks.waitTask(api.principal, id, { timeoutMs: 120_000, onStatus: (e) => events.push(e) });
    // Down for longer than the task has left: it completes upstream, and in its row, meanwhile.
    await nats.restart(8_000);
    const ended = await waiting;
    expect(ended.state).toBe('completed');
    expect(events.filter((e) => e.state === 'completed').length).toBeLessThanOrEqual(1);
    expect((await tasks.taskResult(api.principal, id)).text).toBe('export ready: json');
    expect(upstream.stats.created).toBe(1);
  });
});
