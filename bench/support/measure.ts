import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { processCpuMs } from '../../test/support/proc-cpu.js';
import { ROOT } from '../../test/support/system.js';

export { mainThreadCpuMs, processCpuMs } from '../../test/support/proc-cpu.js';

/** The value at percentile `p` of an ascending list (0 for an empty one). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Runs `total` operations over `concurrency` workers; the phase's seconds and its latencies' p50 and p99 (ms). */
export async function runPhase(
  total: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<{ seconds: number; p50: number; p99: number }> {
  const latencies: number[] = new Array<number>(total);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const t = performance.now();
        await op(i);
        latencies[i] = performance.now() - t;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/**
 * CPU milliseconds every `postgres` process of this machine has used (/proc, utime + stime; 0
 * where there is no /proc). The bench's Postgres serves nothing else while a phase runs, so the
 * difference over a phase is what the phase cost the database (the call log's inserts).
 */
export function postgresCpuMs(): number {
  let total = 0;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    total += processCpuMs(Number(pid));
  }
  return total;
}

/** The loopback echo MCP server of one era (test/servers/echo-upstream-main.ts) in its own process. */
export interface EchoUpstream {
  url: string;
  pid: number | undefined;
  stderr: string[];
  cpuMs: () => number;
  stop: () => void;
}

export async function startEchoUpstream(era: 'modern' | 'legacy'): Promise<EchoUpstream> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test', 'servers', 'echo-upstream-main.ts'), '--era', era],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stderr: string[] = [];
  child.stderr.on('data', (d: Buffer) => stderr.push(d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`upstream exited ${code}: ${stderr.join('')}`)));
  });
  return { url, pid: child.pid, stderr, cpuMs: () => processCpuMs(child.pid), stop: () => child.kill('SIGTERM') };
}

/**
 * The proxy's limits in a benchmark: on (Redis-shared, admitted from leased slots and tokens), as
 * in production, and set high enough never to refuse the benchmark's calls.
 */
export const BENCH_PROXY_ENV: Readonly<Record<string, string>> = {
  PROXY_MAX_CONCURRENCY_PER_SERVER: '100000',
  PROXY_RATE_PER_SERVER: '1000000',
  PROXY_MAX_RUNS: '100000',
  PROXY_MAX_CONNECTIONS: '100000',
  LOG_LEVEL: 'warn',
};
