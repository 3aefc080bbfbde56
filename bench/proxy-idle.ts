/**
 * `pnpm bench proxy-idle`: what an idle proxy process costs, in CPU milliseconds a second read from
 * /proc (utime + stime, 10 ms ticks), over `IDLE_WINDOW_S` (20 s) windows:
 *
 * - "fresh": a proxy process started and healthy, no call made yet;
 * - "after calls": the same process after 1,000 calls on a modern echo server (its limits' slots,
 *   its pool's connection and run, its catalog entries held, then left alone for 10 s).
 *
 * No task is open: the cost measured is the loops that run whatever happens (the task poller's
 * look for due tasks and its expiry sweep, the pool's and the watches' sweepers, the limits'
 * timers, NATS and Redis keep-alives). `BENCH_BASELINE_ROOT=<checkout>`: that checkout's proxy
 * beside this one, the same windows at the same time on the same database, NATS and Redis.
 * `BENCH_PROFILE=<dir>`: this code's proxy writes a V8 CPU profile there when it stops.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg, totalmem } from 'node:os';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../test/support/proxy-system.js';
import { statCpuMs } from '../test/support/proc-cpu.js';
import { ROOT } from '../test/support/system.js';
import { BENCH_PROXY_ENV, processCpuMs, runPhase, startEchoUpstream } from './support/measure.js';
import { benchServiceForm } from './support/service-bundles.js';

const IDLE_WINDOW_S = Number(process.env.IDLE_WINDOW_S ?? 20);
const CALLS = 1_000;
const SETTLE_MS = 10_000;

interface Side {
  label: string;
  proxy: ProxyProcess;
}

/** CPU ms each thread of a process has used, summed by thread name (/proc/<pid>/task/<tid>: comm, stat). */
function threadCpuMs(pid: number | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (pid === undefined) return out;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      out.set(comm, (out.get(comm) ?? 0) + statCpuMs(`/proc/${pid}/task/${tid}/stat`));
    }
  } catch {
    // The process or a thread ended meanwhile: what was read stands.
  }
  return out;
}

/** CPU ms a second of each side over one window, measured at once; and by thread, the busiest. */
async function window(sides: Side[]): Promise<{ perSecond: number[]; threads: string[] }> {
  const before = sides.map((s) => processCpuMs(s.proxy.child.pid));
  const threadsBefore = sides.map((s) => threadCpuMs(s.proxy.child.pid));
  const started = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_WINDOW_S * 1000));
  const seconds = (performance.now() - started) / 1000;
  const threads = sides.map((s, i) => {
    const after = threadCpuMs(s.proxy.child.pid);
    const used = [...after]
      .map(([name, ms]) => [name, (ms - (threadsBefore[i]!.get(name) ?? 0)) / seconds] as const)
      .filter(([, perSecond]) => perSecond > 0)
      .sort((a, b) => b[1] - a[1]);
    return `${s.label}: ${used.map(([name, perSecond]) => `${name} ${perSecond.toFixed(1)}`).join(', ') || 'none'}`;
  });
  return { perSecond: sides.map((s, i) => (processCpuMs(s.proxy.child.pid) - before[i]!) / seconds), threads };
}

async function main(): Promise<void> {
  process.stdout.write(`${await benchServiceForm()}\n`);
  const upstream = await startEchoUpstream('modern');
  const system = await ProxySystem.start({ proxies: 0, env: { ...BENCH_PROXY_ENV } });
  const sides: Side[] = [];
  try {
    await system.setServer('mbench', upstream.url);
    await system.createAgent('magent', ['mbench'], 1);
    const profileDir = process.env.BENCH_PROFILE;
    const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    sides.push({ label: 'this code', proxy: await spawnProxyProcess(system, {}, profile, ROOT) });
    const baselineRoot = process.env.BENCH_BASELINE_ROOT;
    if (baselineRoot !== undefined)
      sides.push({ label: 'baseline', proxy: await spawnProxyProcess(system, {}, [], baselineRoot) });
    // Past start-up (its module loading and first connections) before the first window.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const fresh = await window(sides);
    for (const [i, side] of sides.entries()) {
      system.client.stick(`idle-${i}`, side.proxy.instance);
      await runPhase(CALLS, 8, (n) => system.call('magent', `idle-${i}`, 'mbench__echo', { text: `m${n}` }));
    }
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const after = await window(sides);
    const lines = [
      `machine: ${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}, ${new Date().toISOString()}, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      `idle windows of ${IDLE_WINDOW_S} s, no task open; proxy process CPU ms per second (/proc utime + stime)`,
      '',
      '| proxy | fresh | after 1,000 calls |',
      '|---|---:|---:|',
      ...sides.map((s, i) => `| ${s.label} | ${fresh.perSecond[i]!.toFixed(1)} | ${after.perSecond[i]!.toFixed(1)} |`),
      '',
      'by thread (ms/s), fresh:',
      ...fresh.threads,
      'by thread (ms/s), after calls:',
      ...after.threads,
    ];
    if (sides.length === 2)
      lines.push(
        '',
        `this code / baseline: fresh ${(fresh.perSecond[0]! / fresh.perSecond[1]!).toFixed(3)}×, after calls ${(after.perSecond[0]! / after.perSecond[1]!).toFixed(3)}×`,
      );
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const s of sides) await s.proxy.stop().catch(() => undefined);
    await system.stop();
    upstream.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
