import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskClient } from '@mcpx/proxy-client';
import { startEverythingServer, type EverythingServer } from '../servers/index.js';
import { startFrontServer, type FrontServer } from '../servers/front-server.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

/**
 * A 2025-11-25 task holds no pool run while it is open (docs/tasks.md#the-broker): its run's
 * connection is closed without ending its session once the task is recorded, its polls and its
 * result go on by the session's id, and the session is ended (`DELETE`) when the task ends —
 * completed or cancelled. Against server-everything's `simulate-research-query` (SDK v1), seen
 * through a forwarding front that records each request's HTTP method and session id. The proxy
 * holds one run at most (`PROXY_MAX_RUNS=1`): two open tasks would not fit if each held its run.
 */
describe('2025-11-25 tasks: the pool run is let go, the session ended with the task', { timeout: 120_000 }, () => {
  let system: ProxySystem;
  let everything: EverythingServer;
  let front: FrontServer;
  let tasks: TaskClient;

  beforeAll(async () => {
    [system, everything] = await Promise.all([
      ProxySystem.start({ env: { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100', PROXY_MAX_RUNS: '1' } }),
      startEverythingServer('streamableHttp'),
    ]);
    front = await startFrontServer({ mode: 'forward', target: new URL(everything.url).origin });
    await system.setServer('every', `${front.origin}${new URL(everything.url).pathname}`);
    await system.createAgent('agent', ['every'], 10);
    tasks = new TaskClient(system.nc, system.subjects);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await front?.close();
    await everything?.close();
  });

  /** The session ids a DELETE named since `from`. */
  const deleted = (from: number): string[] =>
    front.seen
      .slice(from)
      .filter((r) => r.method === 'DELETE')
      .map((r) => r.sessionId ?? '');
  /** The session ids of the POSTs sent since `from` (the task's tools/call, its polls, its tasks/result). */
  const postedSessions = (from: number): Set<string> =>
    new Set(
      front.seen
        .slice(from)
        .filter((r) => r.method === 'POST' && r.sessionId !== undefined)
        .map((r) => r.sessionId!),
    );

  it('two 2025 tasks open at once on a proxy that holds one run; each completes, and each session is deleted when its task ends', async () => {
    const proxy = system.proxies[0]!;
    const runsBefore = proxy.stats().runs;
    const from = front.seen.length;
    const first = await system.call(
      'agent',
      'r-one',
      'every__simulate-research-query',
      { topic: 'tides' },
      { timeoutMs: 1_000 },
    );
    const a = first.result.task!.id;
    expect(a).toMatch(/^tsk_/);
    expect((await tasks.getTask(system.account, a)).state).not.toMatch(/completed|failed/);
    // The task is open and its run is gone: the pool holds what it held before the call.
    expect(proxy.stats().runs).toBe(runsBefore);
    // A second task while the first is open: its run fits (one held per task would be refused, rate_limited).
    const second = await system.call(
      'agent',
      'r-two',
      'every__simulate-research-query',
      { topic: 'reefs' },
      { timeoutMs: 1_000 },
    );
    const b = second.result.task!.id;
    expect(proxy.stats().runs).toBe(runsBefore);
    expect(deleted(from)).toEqual([]);

    const [endA, endB] = await Promise.all([
      tasks.waitTask(system.account, a, { timeoutMs: 60_000 }),
      tasks.waitTask(system.account, b, { timeoutMs: 60_000 }),
    ]);
    expect(endA.state).toBe('completed');
    expect(endB.state).toBe('completed');
    // Polled and fetched on their sessions, by id, after their connections were closed.
    expect((await tasks.taskResult(system.account, a)).text).toContain('# Research Report: tides');
    expect((await tasks.taskResult(system.account, b)).text).toContain('# Research Report: reefs');
    const sessions = postedSessions(from);
    expect(sessions.size).toBe(2);
    // Each task's session is ended once it ended, and no other.
    const ends = await eventually(
      () => Promise.resolve(deleted(from).length >= 2 ? deleted(from) : undefined),
      10_000,
      'the sessions deleted',
    );
    expect(new Set(ends)).toEqual(sessions);
    // Counted when the DELETE's answer is back, a moment after the server saw the request.
    const ended = /mcpx_proxy_task_sessions_ended_total\{[^}]*outcome="ended"[^}]*\} (\d+)/;
    const counted = await eventually(
      async () => {
        const n = ended.exec(await (await fetch(`${proxy.internalUrl}/metrics`)).text())?.[1];
        return n === '2' ? n : undefined;
      },
      10_000,
      'both session ends counted',
    );
    expect(counted).toBe('2');
  });

  it("a cancelled 2025 task's session is deleted too", async () => {
    const from = front.seen.length;
    const out = await system.call(
      'agent',
      'r-cancel',
      'every__simulate-research-query',
      { topic: 'dunes' },
      { timeoutMs: 500 },
    );
    const id = out.result.task!.id;
    const session = [...postedSessions(from)];
    expect(session).toHaveLength(1);
    expect(deleted(from)).not.toContain(session[0]);
    const view = await tasks.cancelTask(system.account, id);
    expect(view.state).toBe('cancelled');
    await eventually(
      () => Promise.resolve(deleted(from).includes(session[0]!) ? true : undefined),
      10_000,
      'the cancelled task’s session deleted',
    );
  });
});
