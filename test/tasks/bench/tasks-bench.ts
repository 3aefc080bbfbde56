/**
 * `pnpm bench tasks`: brokered tasks at scale (docs/tasks.md). Three proxy processes on one
 * registry, projector, Postgres, Redis and NATS; a modern task server of the tests' own (SDK v2,
 * the 2026-07-28 tasks extension) in a process of its own (`test/servers/tasks-upstream-main.ts`;
 * the samples' server in another), counting the `tasks/get`s it answers.
 *
 * - 10,000 open tasks (`never-ends`, the server's poll interval 10 s) created through the proxies
 *   by runtime calls (each proxy polls the tasks it created, under its lease);
 * - the poll load per proxy over a window (its `mcpx_proxy_task_polls_total`): spread within ±20 %
 *   of the mean;
 * - `tasks/get` per task, counted by the server: no two of one task closer than the poll interval
 *   less its jitter (−10 %), and the mean per task per interval;
 * - each proxy's RSS before the tasks and with them open, and its live heap after a full
 *   collection (`/stats/collected`, the proxies run with --expose-gc) over the tasks it created:
 *   the growth per open task;
 * - while they are open, sample tasks on a second server (poll interval 1 s, done 3 s after their
 *   creation) awaited by a runtime with `waitTask`: the time from the task being done upstream to
 *   the runtime hearing it ended (goal: within one poll interval + 100 ms).
 * `BENCH_QUICK=1`: 1,000 tasks, a shorter window.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { TaskClient } from '@mcpx/proxy-client';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../../support/proxy-system.js';
import { ROOT } from '../../support/system.js';

const QUICK = process.env.BENCH_QUICK === '1';
const OPEN_TASKS = Number(process.env.BENCH_TASKS ?? (QUICK ? 1_000 : 10_000));
/** The load server's poll interval (`BENCH_POLL_MS`): 30 s, the broker's most (`TASK_POLL_MAX_MS`), as a long task's server would say. */
const LOAD_POLL_MS = Number(process.env.BENCH_POLL_MS ?? 30_000);
/** Two poll intervals: every open task is due twice in the window. */
const WINDOW_MS = 2 * LOAD_POLL_MS;
/** Creation stops here (`BENCH_CREATE_S`) and the run measures the tasks it opened: a loaded box may not reach the goal's count. */
const CREATE_BUDGET_MS = Number(process.env.BENCH_CREATE_S ?? (QUICK ? 120 : 900)) * 1000;
const SAMPLE_POLL_MS = 1_000;
const SAMPLE_DURATION_MS = 3_000;
const SAMPLES = QUICK ? 10 : 30;
/** Callers creating the tasks at once: each call answers with the handle as soon as its task is recorded (`taskWaitMs: 0`). */
const CREATORS = Number(process.env.BENCH_CREATORS ?? 100);
const CALL_BOUND_MS = 30_000;
const JITTER = 0.1;

interface ProxyStatsView {
  rss: number;
  heapUsed: number;
  runs: number;
  connections: number;
  collected?: boolean;
}

async function statsOf(p: ProxyProcess): Promise<ProxyStatsView> {
  return (await (await fetch(`${p.internalUrl}/stats`)).json()) as ProxyStatsView;
}

/** A proxy's stats after a full collection (the proxies run with --expose-gc): its live heap. */
async function collectedOf(p: ProxyProcess): Promise<ProxyStatsView> {
  return (await (await fetch(`${p.internalUrl}/stats/collected`)).json()) as ProxyStatsView;
}

/** A proxy's `tasks/get` polls so far (every outcome), from its Prometheus text. */
async function pollsOf(p: ProxyProcess): Promise<number> {
  const text = await (await fetch(`${p.internalUrl}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('mcpx_proxy_task_polls_total')) n += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  return n;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const print = (line: string): void => void process.stdout.write(`${line}\n`);

/** A task server in a process of its own, asked over IPC what it saw. */
interface ServerProcess {
  url: string;
  ask<T>(message: object, key: string): Promise<T>;
  close(): Promise<void>;
}

async function forkServer(args: string[]): Promise<ServerProcess> {
  const child: ChildProcess = fork(join(ROOT, 'test/servers/tasks-upstream-main.ts'), args, {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve(m.url));
    child.once('exit', (code) => reject(new Error(`the task server exited (${code})`)));
  });
  return {
    url,
    ask: async <T>(message: object, key: string): Promise<T> =>
      await new Promise<T>((resolve) => {
        const on = (m: Record<string, unknown>): void => {
          if (!(key in m)) return;
          child.off('message', on);
          resolve(m[key] as T);
        };
        child.on('message', on);
        child.send(message);
      }),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function main(): Promise<void> {
  const load = await forkServer(['--poll-ms', String(LOAD_POLL_MS), '--ttl-ms', '3600000']);
  const samples = await forkServer(['--poll-ms', String(SAMPLE_POLL_MS), '--duration-ms', String(SAMPLE_DURATION_MS)]);
  const env = {
    LOG_LEVEL: 'warn',
    QUOTA_RUNNING_TASKS_PER_ACCOUNT: String(OPEN_TASKS * 2),
    // The pool's caps stay at their defaults: an open modern task holds no run or connection slot.
    PROXY_MAX_CONCURRENCY_PER_SERVER: '0',
    PROXY_RATE_PER_SERVER: '0',
  };
  const system = await ProxySystem.start({ proxies: 0, env });
  const procs: ProxyProcess[] = [];
  try {
    // One at a time: three starting at once on a loaded box can pass the start's bound.
    // --expose-gc: `/stats/collected` collects before it reads, so the live heap can be told from garbage.
    for (let i = 0; i < 3; i++) procs.push(await spawnProxyProcess(system, env, ['--expose-gc']));
    await system.setServer('load', load.url);
    await system.setServer('sample', samples.url);
    await system.createAgent('bench', ['load', 'sample'], 6);
    const tasks = new TaskClient(system.nc, system.subjects);
    print(
      `machine: ${availableParallelism()} cores, ${mb(totalmem())}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ${OPEN_TASKS} open tasks, 3 proxies`,
    );

    // Warm each proxy's call path, then its RSS before the tasks.
    await Promise.all(Array.from({ length: 30 }, (_, i) => system.call('bench', `warm-${i}`, 'load__quick', {})));
    // And the path a new task takes (compiled before the first heap reading): tasks opened, then cancelled.
    const warmTasks = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        system
          .call('bench', `warm-${i % 30}`, 'load__never-ends', {}, { task: true, taskWaitMs: 0 })
          .catch(() => undefined),
      ),
    );
    for (const w of warmTasks) {
      const id = w?.result.task?.id;
      if (id !== undefined) await tasks.cancelTask(system.account, id).catch(() => undefined);
    }
    const rssBefore = await Promise.all(procs.map(async (p) => (await statsOf(p)).rss));
    const heapBefore = await Promise.all(procs.map(async (p) => (await collectedOf(p)).heapUsed));

    const createdAt = performance.now();
    let next = 0;
    let failed = 0;
    let opened = 0;
    let firstError: string | undefined;
    /** Tasks each proxy created (its instance answered the call): it holds and polls them. */
    const createdBy = new Map<string, number>();
    await Promise.all(
      Array.from({ length: CREATORS }, async () => {
        for (let i = next++; i < OPEN_TASKS && performance.now() - createdAt < CREATE_BUDGET_MS; i = next++) {
          const out = await system
            .call(
              'bench',
              `open-${i % 500}`,
              'load__never-ends',
              {},
              { task: true, taskWaitMs: 0, timeoutMs: CALL_BOUND_MS },
            )
            .catch((err: unknown) => {
              firstError ??=
                err instanceof Error ? `${(err as { code?: string }).code ?? err.name}: ${err.message}` : String(err);
              return undefined;
            });
          if (out?.result.task === undefined) failed++;
          else {
            opened++;
            createdBy.set(out.instance, (createdBy.get(out.instance) ?? 0) + 1);
          }
        }
      }),
    );
    const createSeconds = (performance.now() - createdAt) / 1000;
    print(
      `created ${opened} of ${OPEN_TASKS} tasks in ${createSeconds.toFixed(1)} s (${(opened / createSeconds).toFixed(1)}/s, ${CREATORS} callers), ${failed} failed, ${OPEN_TASKS - opened - failed} not tried (the creation budget, ${CREATE_BUDGET_MS / 1000} s)${firstError !== undefined ? ` (the first: ${firstError.slice(0, 300)})` : ''}`,
    );

    // Settle one poll interval, then the window: polls per proxy, gets per task.
    await new Promise((r) => setTimeout(r, LOAD_POLL_MS));
    // The live heap with the tasks open, before the window's sample tasks (polls under way included: at most 64 a proxy).
    const heapOpen = await Promise.all(procs.map(async (p) => (await collectedOf(p)).heapUsed));
    const pollsAtStart = await Promise.all(procs.map(pollsOf));
    const windowStart = Date.now();
    const sampleLatencies = await sampleLatency(system, tasks, samples);
    const left = WINDOW_MS - (Date.now() - windowStart);
    if (left > 0) await new Promise((r) => setTimeout(r, left));
    const windowEnd = Date.now();
    const polls = (await Promise.all(procs.map(pollsOf))).map((n, i) => n - pollsAtStart[i]!);
    const after = await Promise.all(procs.map(statsOf));
    const rssAfter = after.map((s) => s.rss);
    print(
      `pool with the tasks open (runs, connections per proxy): ${after.map((s) => `${s.runs}/${s.connections}`).join(', ')}`,
    );

    const mean = polls.reduce((a, b) => a + b, 0) / polls.length;
    const spread = polls.map((n) => (mean === 0 ? 0 : (n - mean) / mean));
    print(
      `polls per proxy in ${((windowEnd - windowStart) / 1000).toFixed(0)} s: ${polls.join(', ')} (${spread.map((s) => `${s >= 0 ? '+' : ''}${(s * 100).toFixed(1)} %`).join(', ')} of the mean); goal ±20 %: ${spread.every((s) => Math.abs(s) <= 0.2) ? 'met' : 'NOT met'}`,
    );
    const expected = opened * ((windowEnd - windowStart) / LOAD_POLL_MS);
    print(
      `all polls ${polls.reduce((a, b) => a + b, 0)} in the window, ${expected.toFixed(0)} expected at one per task per ${LOAD_POLL_MS / 1000} s (${((polls.reduce((a, b) => a + b, 0) / expected) * 100).toFixed(0)} %)`,
    );

    const { closest, tooClose, tooCloseInWindow, inWindow } = await load.ask<{
      closest: number | null;
      tooClose: number;
      tooCloseInWindow: number;
      inWindow: number;
    }>({ op: 'gets', from: windowStart, to: windowEnd, minGapMs: LOAD_POLL_MS * (1 - JITTER) - 50 }, 'gets');
    const perTaskPerInterval = inWindow / opened / ((windowEnd - windowStart) / LOAD_POLL_MS);
    print(
      `tasks/get per task: closest two ${closest} ms apart (interval ${LOAD_POLL_MS} ms, jitter ±10 %), ${tooClose} gaps under the interval less its jitter (${tooCloseInWindow} of them ending in the window); ${perTaskPerInterval.toFixed(2)} per task per interval; goal at most one: ${tooClose === 0 && perTaskPerInterval <= 1.0 ? 'met' : 'NOT met'}`,
    );

    for (const [i, p] of procs.entries()) {
      const share =
        (polls[i]! /
          Math.max(
            1,
            polls.reduce((a, b) => a + b, 0),
          )) *
        opened;
      print(
        `proxy ${i + 1}: RSS ${mb(rssBefore[i]!)} → ${mb(rssAfter[i]!)}, about ${share.toFixed(0)} open tasks: ${((rssAfter[i]! - rssBefore[i]!) / Math.max(1, share) / 1024).toFixed(1)} KiB per open task (${p.instance})`,
      );
    }
    for (const [i, p] of procs.entries()) {
      const mine = createdBy.get(p.instance) ?? 0;
      print(
        `proxy ${i + 1}: live heap after a full collection ${mb(heapBefore[i]!)} → ${mb(heapOpen[i]!)} with the ${mine} open tasks it created: ${mine === 0 ? '—' : ((heapOpen[i]! - heapBefore[i]!) / mine).toFixed(0)} bytes per open task (${p.instance})`,
      );
    }
    const goal = SAMPLE_POLL_MS + 100;
    for (const [what, list] of [
      ['its end heard (the event)', sampleLatencies.heard],
      ['its result in hand (taskResult)', sampleLatencies.result],
    ] as const) {
      const sorted = [...list].sort((a, b) => a - b);
      print(
        `a finished task reaching a waiting runtime, ${what} (${sorted.length} tasks, poll interval ${SAMPLE_POLL_MS} ms), from done upstream: p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms; goal ≤ ${goal} ms: ${(sorted.at(-1) ?? Infinity) <= goal ? 'met' : `NOT met (${sorted.filter((l) => l > goal).length} over)`}`,
      );
    }
    print(
      `load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await system.stop();
    await Promise.all([load.close(), samples.close()]);
  }
}

/**
 * Sample tasks, a few at a time: each created with a format of its own (the server says when it is
 * done, by format), awaited with `waitTask`; the time from done upstream to the runtime hearing
 * the end, then its result taken.
 */
async function sampleLatency(
  system: ProxySystem,
  tasks: TaskClient,
  server: ServerProcess,
): Promise<{ heard: number[]; result: number[]; missed: number }> {
  const out = { heard: [] as number[], result: [] as number[], missed: 0 };
  const done: { format: string; heard: number; result: number }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 3 }, async () => {
      for (let i = next++; i < SAMPLES; i = next++) {
        const format = `sample-${i}`;
        const call = await system
          .call(
            'bench',
            `sample-${i}`,
            'sample__long-export',
            { format },
            { task: true, taskWaitMs: 0, timeoutMs: CALL_BOUND_MS },
          )
          .catch(() => undefined);
        const id = call?.result.task?.id;
        if (id === undefined) {
          out.missed++;
          continue;
        }
        let heard: number | undefined;
        const ended = await tasks.waitTask(system.account, id, {
          timeoutMs: 60_000,
          onStatus: (e) => void (e.state === 'completed' ? (heard ??= Date.now()) : undefined),
        });
        if (ended.state !== 'completed') {
          out.missed++;
          continue;
        }
        await tasks.taskResult(system.account, id);
        done.push({ format, heard: heard ?? Date.now(), result: Date.now() });
      }
    }),
  );
  // When each was done upstream: the server's clock is this machine's.
  const ends = new Map(await server.ask<[string, number][]>({ op: 'ends' }, 'ends'));
  for (const d of done) {
    const end = ends.get(d.format)!;
    out.heard.push(d.heard - end);
    out.result.push(d.result - end);
  }
  return out;
}

await main();
