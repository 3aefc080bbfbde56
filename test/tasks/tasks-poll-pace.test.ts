import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskClient } from '@mcpx/proxy-client';
import { startTasksUpstream, type TasksUpstream } from '../servers/tasks-upstream.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../support/proxy-system.js';

/** The server's poll interval; the proxies allow it (TASK_POLL_MIN_MS). */
const POLL_MS = 1_000;
/** How long the backlog holds each task's first `tasks/get` before the server takes it: past the claim's flight and lease. */
const HELD_MS = 5_000;
const TASKS = 4;

/**
 * A task server with a backlog in front of it: the first `tasks/get` of each task is read, then
 * held `HELD_MS` before the server takes it, whether or not its sender is still waiting (as a
 * loaded server takes requests from its queue after their clients gave up). The server counts the
 * gets it takes (`onGet`), when it takes them.
 */
async function backlogFront(upstream: string): Promise<{ url: string; close: () => Promise<void> }> {
  const seen = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const method = req.headers['mcp-method'];
      const task = req.headers['mcp-name'];
      const first = method === 'tasks/get' && typeof task === 'string' && !seen.has(task);
      if (first) seen.add(task);
      const forward = async (): Promise<void> => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === 'string' && k !== 'host' && k !== 'content-length' && k !== 'connection') headers[k] = v;
        try {
          const r = await fetch(upstream, { method: req.method ?? 'POST', headers, body: Buffer.concat(chunks) });
          const body = Buffer.from(await r.arrayBuffer());
          const out: Record<string, string> = {};
          r.headers.forEach((v, k) => {
            if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') out[k] = v;
          });
          if (!res.destroyed) res.writeHead(r.status, out).end(body);
        } catch {
          if (!res.destroyed) res.writeHead(502).end();
        }
      };
      if (first) setTimeout(() => void forward(), HELD_MS);
      else void forward();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * At most one `tasks/get` per task per poll interval, counted by a real task server behind a
 * backlog, polled by two proxy processes on real Postgres: a get the server takes late is never
 * followed by another sooner than the interval (less its jitter) after it. A poll waits for its
 * get's answer, renewing its claim meanwhile, instead of giving up on it at half the lease and
 * polling again, while the server still takes the first get later.
 */
describe('the pace of task polls behind a server backlog', () => {
  let system: ProxySystem;
  let upstream: TasksUpstream;
  let front: Awaited<ReturnType<typeof backlogFront>>;
  let procs: ProxyProcess[] = [];
  const gets = new Map<string, number[]>();

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start({ proxies: 0 }),
      startTasksUpstream({
        durationMs: 12_000,
        pollIntervalMs: POLL_MS,
        onGet: (id) => void (gets.get(id) ?? gets.set(id, []).get(id)!).push(Date.now()),
      }),
    ]);
    front = await backlogFront(upstream.url);
    const env = { TASK_LEASE_MS: '2000', TASK_POLL_MIN_MS: '100', LOG_LEVEL: 'error' };
    procs = await Promise.all([spawnProxyProcess(system, env), spawnProxyProcess(system, env)]);
    await system.setServer('modern', front.url);
    await system.createAgent('agent', ['modern'], 3);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system?.stop();
    await front?.close();
    await upstream?.close();
  });

  it('no two gets of one task closer than the interval less its jitter; every task ends with its result', async () => {
    const tasks = new TaskClient(system.nc, system.subjects);
    const ids = await Promise.all(
      Array.from({ length: TASKS }, async (_, i) => {
        const out = await system.call(
          'agent',
          `pace-${i}`,
          'modern__long-export',
          { format: `f${i}` },
          { task: true, taskWaitMs: 0 },
        );
        expect(out.result.task?.id).toBeDefined();
        return out.result.task!.id;
      }),
    );
    for (const [i, id] of ids.entries()) {
      const ended = await tasks.waitTask(system.account, id, { timeoutMs: 60_000 });
      expect(ended.state).toBe('completed');
      expect((await tasks.taskResult(system.account, id)).text).toBe(`export ready: f${i}`);
    }
    expect(gets.size).toBe(TASKS);
    const close: string[] = [];
    for (const [task, times] of gets) {
      // The held first get, and the polls after it until the task completed.
      expect(times.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < times.length; i++) {
        const gap = times[i]! - times[i - 1]!;
        if (gap < POLL_MS * 0.9 - 50) close.push(`${task}: ${gap} ms`);
      }
    }
    expect(close, 'tasks/get pairs of one task under the interval less its jitter').toEqual([]);
  }, 120_000);
});
