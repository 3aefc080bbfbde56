/**
 * `pnpm bench proxy`: calls through NATS + the proxy versus the plain MCP SDK client, side by side
 * in one run, against the same upstream (the test MCP server's `echo` tool, Streamable HTTP, in a
 * process of its own on loopback).
 *
 * - sequential: 2,000 calls, one at a time; concurrent: 5,000 calls from 32 callers (one run, one
 *   session for the proxy; one SDK client for the direct side);
 * - calls/s, p50, p99; CPU per call of the proxy process (its `/stats` reports `process.cpuUsage`)
 *   and of this process while it runs the direct client;
 * - the proxy has validation, the grant check, the Redis-shared limits, tracing and metrics on;
 * - afterwards, the proxy's RSS with 1,000 runs each holding one open connection;
 * - MaxListenersExceededWarning is looked for in both processes.
 */
import { spawn } from 'node:child_process';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '../test/support/sdk-client.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../test/support/proxy-system.js';
import { ROOT } from '../test/support/system.js';

const SEQUENTIAL = 2_000;
const CONCURRENT = 5_000;
const CALLERS = 32;
const WARMUP = 300;
const RUNS_FOR_RSS = 1_000;

interface Phase {
  what: string;
  calls: number;
  seconds: number;
  p50: number;
  p99: number;
  cpuPerCallMs: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function run(total: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<{ seconds: number; p50: number; p99: number }> {
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

const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;

async function proxyStats(p: ProxyProcess): Promise<{ cpu: NodeJS.CpuUsage; rss: number; connections: number; runs: number }> {
  return (await (await fetch(`${p.url}/stats`)).json()) as { cpu: NodeJS.CpuUsage; rss: number; connections: number; runs: number };
}

async function startUpstream(): Promise<{ url: string; stop: () => void; stderr: string[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'servers', 'echo-upstream-main.ts')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr.on('data', (d: Buffer) => stderr.push(d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`upstream exited ${code}: ${stderr.join('')}`)));
  });
  return { url, stop: () => child.kill('SIGTERM'), stderr };
}

async function main(): Promise<void> {
  const warnings: string[] = [];
  process.on('warning', (w) => warnings.push(`${w.name}: ${w.message}`));
  const upstream = await startUpstream();
  const system = await ProxySystem.start({
    proxies: 0,
    // Limits on (Redis-shared, admitted from leased slots and tokens), set high enough not to refuse the benchmark.
    env: { PROXY_MAX_CONCURRENCY_PER_SERVER: '100000', PROXY_RATE_PER_SERVER: '1000000', LOG_LEVEL: 'warn' },
  });
  // BENCH_PROFILE=<dir>: the proxy writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profileDir = process.env.BENCH_PROFILE;
  const proxy = await spawnProxyProcess(system, {}, profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
  const direct = new Client({ name: 'bench-direct', version: '0' });
  try {
    await system.setServer('bench', upstream.url);
    await system.createAgent('agent', ['bench'], 1);
    await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url)));

    const directCall = (i: number) => direct.callTool({ name: 'echo', arguments: { text: `m${i}` } });
    const proxiedCall = (i: number) => system.call('agent', 'bench-run', 'bench__echo', { text: `m${i}` });

    const phases: Phase[] = [];
    const measureDirect = async (what: string, total: number, conc: number): Promise<void> => {
      await run(WARMUP, conc, directCall);
      const before = process.cpuUsage();
      const r = await run(total, conc, directCall);
      phases.push({ what, calls: total, ...r, cpuPerCallMs: cpuMs(process.cpuUsage(before)) / total });
    };
    const measureProxied = async (what: string, total: number, conc: number): Promise<{ clientCpuPerCallMs: number }> => {
      await run(WARMUP, conc, proxiedCall);
      const before = (await proxyStats(proxy)).cpu;
      const clientBefore = process.cpuUsage();
      const r = await run(total, conc, proxiedCall);
      const clientCpu = cpuMs(process.cpuUsage(clientBefore));
      const after = (await proxyStats(proxy)).cpu;
      phases.push({ what, calls: total, ...r, cpuPerCallMs: (cpuMs(after) - cpuMs(before)) / total });
      return { clientCpuPerCallMs: clientCpu / total };
    };

    await measureDirect('direct SDK, sequential', SEQUENTIAL, 1);
    const seqClient = await measureProxied('NATS + proxy, sequential', SEQUENTIAL, 1);
    await measureDirect(`direct SDK, ${CALLERS} callers`, CONCURRENT, CALLERS);
    const concClient = await measureProxied(`NATS + proxy, ${CALLERS} callers`, CONCURRENT, CALLERS);

    // Resident memory with 1,000 runs, each holding one open connection (a session upstream).
    const rssBefore = (await proxyStats(proxy)).rss;
    await run(RUNS_FOR_RSS, 50, (i) => system.call('agent', `rss-${i}`, 'bench__echo', { text: 'x' }));
    const loaded = await proxyStats(proxy);

    const fmt = (n: number, d = 2): string => n.toFixed(d);
    const rows = phases.map((p) => `| ${p.what} | ${p.calls} | ${fmt(p.calls / p.seconds, 0)} | ${fmt(p.p50, 3)} | ${fmt(p.p99, 3)} | ${fmt(p.cpuPerCallMs, 3)} |`);
    const [ds, ps, dc, pc] = phases as [Phase, Phase, Phase, Phase];
    const proxyWarned = /MaxListenersExceeded/.test(proxy.logs.join(''));
    const directWarned = warnings.some((w) => /MaxListeners/.test(w));
    const out = [
      `machine: ${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
      '',
      '| phase | calls | calls/s | p50 ms | p99 ms | CPU ms/call (proxy process, or the direct client) |',
      '|---|---|---|---|---|---|',
      ...rows,
      '',
      `sequential p50: proxy − direct = ${fmt(ps.p50 - ds.p50, 3)} ms (goal ≤ 0.35)`,
      `concurrent throughput: proxy / direct = ${fmt(pc.calls / pc.seconds / (dc.calls / dc.seconds), 3)} (goal ≥ 0.95)`,
      `proxy CPU per call vs direct client CPU per call: sequential ${fmt(ps.cpuPerCallMs, 3)} vs ${fmt(ds.cpuPerCallMs, 3)} ms; concurrent ${fmt(pc.cpuPerCallMs, 3)} vs ${fmt(dc.cpuPerCallMs, 3)} ms (goal ≤)`,
      `runtime-side NATS client CPU per call (this process): sequential ${fmt(seqClient.clientCpuPerCallMs, 3)} ms, concurrent ${fmt(concClient.clientCpuPerCallMs, 3)} ms`,
      `proxy calls/s per core (concurrent calls / proxy CPU seconds): ${fmt(1000 / pc.cpuPerCallMs, 0)}`,
      `proxy RSS: ${fmt(rssBefore / 2 ** 20, 1)} MiB before, ${fmt(loaded.rss / 2 ** 20, 1)} MiB with ${loaded.runs} runs / ${loaded.connections} open connections`,
      `MaxListenersExceededWarning in the proxy: ${proxyWarned ? 'SEEN' : 'none'}; in this process (the plain SDK client, the baseline): ${directWarned ? 'seen' : 'none'}`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await direct.close().catch(() => undefined);
    await proxy.stop();
    await system.stop();
    upstream.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
