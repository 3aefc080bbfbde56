import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTaskEvent, type TaskEvent } from '@mcpx/contracts';
import { startFaultyFront, type FaultyFront } from '../ops/support/faulty-front.js';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';
import { taskInRow } from '../support/fixtures/task-systems.js';

/**
 * A task that ends while its proxy's NATS link is down (docs/tasks.md#faults): nats.js drops what
 * was published while its connection was down, so the proxy's end event went nowhere and a
 * runtime that stayed connected (it had no reason to read the task again) heard of the end only
 * at its own bound. The proxy now publishes each task's last event again once its connection is
 * back. A real proxy process reaches NATS through a relay that is cut and then holds every new
 * connection silent; the task ends in its row meanwhile (HTTP and Postgres need no NATS); the
 * listener, on NATS directly all along, hears the end only once the relay passes again.
 */
describe("a task's end published while the proxy's NATS link is down", () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let front: FaultyFront;
  let proxy: ProxyProcess;
  let db: pg.Client;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTasksUpstream({ durationMs: 3_000, pollIntervalMs: 200 }),
    ]);
    const nats = new URL(system.env.NATS_URL ?? 'nats://127.0.0.1:4222');
    front = await startFaultyFront({ host: nats.hostname, port: Number(nats.port || 4222) });
    proxy = await spawnProxyProcess(system, {
      NATS_URL: `nats://127.0.0.1:${front.port}`,
      TASK_LEASE_MS: '3000',
      TASK_POLL_MIN_MS: '100',
      LOG_LEVEL: 'warn',
    });
    await system.setServer('modern', upstream.url);
    await system.createAgent('agent', ['modern'], 3);
    db = new pg.Client({ connectionString: system.db.url });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    if (front !== undefined) front.mode = 'pass';
    await db?.end();
    await proxy?.stop().catch(() => undefined);
    await front?.close();
    await system?.stop();
    await upstream?.close();
  });

  const replayedCount = async (): Promise<number> => {
    const text = await (await fetch(`${proxy.internalUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('mcpx_proxy_task_events_replayed_total'));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  it('is published again once the link is back, and heard by a listener that never left', async () => {
    const out = await system.call(
      'agent',
      'r-replayed',
      'modern__long-export',
      { format: 'csv' },
      { task: true, timeoutMs: 500 },
    );
    const id = out.result.task?.id;
    expect(id).toBeDefined();
    const events: TaskEvent[] = [];
    const sub = system.nc.subscribe(system.subjects.taskStatus(system.account, id!), {
      callback: (err, msg) => {
        if (err === null) events.push(decodeTaskEvent(msg.data));
      },
    });
    await system.nc.flush();
    try {
      // The link goes down: open connections cut, new ones accepted and never answered.
      front.mode = 'blackhole';
      front.cut();
      await taskInRow(db, id!, 'completed', 60_000, 'the task ended in its row while the link was down');
      // Its end was published into the dead link: nothing arrived.
      await new Promise((r) => setTimeout(r, 500));
      expect(events.filter((e) => e.state === 'completed')).toEqual([]);
      const before = await replayedCount();
      // The link passes again; the connections held silent are cut so the proxy's next attempt gets through.
      front.mode = 'pass';
      front.cut();
      const ended = await eventually(
        async () => events.find((e) => e.state === 'completed'),
        30_000,
        'the end published again after the reconnection',
      );
      expect(ended).toMatchObject({ task: id, state: 'completed', account: system.account });
      expect(await replayedCount()).toBeGreaterThan(before);
    } finally {
      sub.unsubscribe();
    }
    expect(upstream.stats.created).toBe(1);
  });
});
