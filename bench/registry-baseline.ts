/**
 * `BENCH_BASELINE_ROOT=<checkout> pnpm bench registry`: this checkout's registry against another
 * checkout's (e.g. a worktree of the commit before a change, its dependencies installed), in the
 * same run: both as their own processes (`node --import tsx services/registry/src/main.ts`, from
 * each root), on one database, NATS namespace and Redis prefix, one account, the same upstreams.
 * Each operation runs on both in turns (the order flips every round), so the box's load falls on
 * both alike; a row gives each registry's throughput, p50 and p99 and its process's CPU per
 * operation, then the ratio of this checkout's to the baseline's. `REGISTRY_BENCH=baseline` runs
 * only this part.
 */
import type { ChildProcess } from 'node:child_process';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../test/servers/index.js';
import { ApiClient } from '../test/support/api-client.js';
import { ROOT, systemEnv } from '../test/support/system.js';
import { startServiceProcess } from './support/service-process.js';
import { percentile, processCpuMs } from './support/measure.js';

const UPSTREAMS = 10;
const TOOLS_PER_SERVER = 5;

interface Registry {
  label: 'this' | 'baseline';
  url: string;
  child: ChildProcess;
  logs: string[];
}

/** One registry of `root` as its own process, healthy. */
async function startRegistryProcess(
  label: Registry['label'],
  root: string,
  env: Record<string, string>,
): Promise<Registry> {
  const running = await startServiceProcess({
    root,
    service: 'registry',
    label: `registry-bench-${label}`,
    env,
    timeoutMs: 120_000,
  });
  return { label, ...running };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** One registry's figures for one operation. */
interface Side {
  latencies: number[];
  ms: number;
  cpuMs: number;
}

export interface SideBySideRow {
  what: string;
  ops: number;
  /** ops/s, p50, p99 and registry CPU ms per op of this checkout, then of the baseline. */
  current: { perSecond: number; p50: number; p99: number; cpuPerOp: number };
  baseline: { perSecond: number; p50: number; p99: number; cpuPerOp: number };
}

/** Runs `op` `rounds` times on each registry, in turns (the order flipping each round). */
async function interleaved(
  what: string,
  rounds: number,
  sides: Array<{ registry: Registry; op: () => Promise<unknown> }>,
): Promise<SideBySideRow> {
  const figures = sides.map((): Side => ({ latencies: [], ms: 0, cpuMs: 0 }));
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const side = sides[k]!;
      const f = figures[k]!;
      const cpu0 = processCpuMs(side.registry.child.pid);
      const t0 = performance.now();
      await side.op();
      const ms = performance.now() - t0;
      f.cpuMs += processCpuMs(side.registry.child.pid) - cpu0;
      f.latencies.push(ms);
      f.ms += ms;
    }
  }
  const summary = (f: Side): SideBySideRow['current'] => {
    const sorted = [...f.latencies].sort((a, b) => a - b);
    return {
      perSecond: (rounds * 1000) / f.ms,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      cpuPerOp: f.cpuMs / rounds,
    };
  };
  return { what, ops: rounds, current: summary(figures[0]!), baseline: summary(figures[1]!) };
}

/** The side-by-side rows: listing, an unchanged save (validates, saves, discovers), a refresh, at `rounds` each. */
export async function sideBySide(baselineRoot: string, rounds = 300): Promise<SideBySideRow[]> {
  const tools = Array.from({ length: TOOLS_PER_SERVER }, (_, i) => ({ ...echoTool(), name: `tool_${i}` }));
  const upstreams: TestMcpServer[] = await Promise.all(
    Array.from({ length: UPSTREAMS }, () => startTestMcpServer({ era: 'modern', tools })),
  );
  const { env, db } = await systemEnv({
    LOG_LEVEL: 'warn',
    RATE_ACTIONS_PER_SIGNER: '0',
    RATE_ACTIONS_PER_ADDRESS: '0',
  });
  const started: Registry[] = [];
  try {
    // One after the other: the first migrates the database, the second finds it migrated.
    started.push(await startRegistryProcess('this', ROOT, env));
    started.push(await startRegistryProcess('baseline', baselineRoot, env));
    const [current, baseline] = started as [Registry, Registry];
    const a = new ApiClient(current.url);
    const b = new ApiClient(baseline.url, a.key);
    const name = (i: number): string => `s${String(i).padStart(2, '0')}`;
    const urlOf = (i: number): string => upstreams[i % UPSTREAMS]?.url ?? '';
    for (let i = 0; i < UPSTREAMS; i++) await a.act('SetMcpServer', { name: name(i), config: { url: urlOf(i) } });
    // Warm both (JIT, pools, connections).
    for (let i = 0; i < 30; i++)
      for (const api of [a, b]) {
        await api.act('ListMcpServers');
        await api.act('RefreshMcpServer', { name: name(i % UPSTREAMS) });
      }
    const both = (op: (api: ApiClient, i: number) => Promise<unknown>) => {
      let i = 0;
      let j = 0;
      return [
        { registry: current, op: () => op(a, i++) },
        { registry: baseline, op: () => op(b, j++) },
      ];
    };
    return [
      await interleaved(
        'ListMcpServers (10 servers)',
        rounds * 2,
        both((api) => api.act('ListMcpServers')),
      ),
      await interleaved(
        'SetMcpServer, unchanged config',
        rounds,
        both((api, i) => api.act('SetMcpServer', { name: name(i % UPSTREAMS), config: { url: urlOf(i % UPSTREAMS) } })),
      ),
      await interleaved(
        'RefreshMcpServer (5 tools)',
        rounds,
        both((api, i) => api.act('RefreshMcpServer', { name: name(i % UPSTREAMS) })),
      ),
    ];
  } finally {
    await Promise.all(started.map((r) => stopProcess(r.child)));
    await db.drop().catch(() => undefined);
    await Promise.all(upstreams.map((u) => u.close()));
  }
}

/** The side-by-side table: each registry's figures and this checkout's over the baseline's. */
export function reportSideBySide(rows: SideBySideRow[], baselineRoot: string): void {
  const f = (n: number, d = 1): string => n.toFixed(d);
  process.stdout.write(`\nthis registry against the baseline's (${baselineRoot}), interleaved, same run\n\n`);
  process.stdout.write(
    '| what | ops each | ops/s this / base | p50 ms this / base | p99 ms this / base | CPU ms/op this / base | time ratio | CPU ratio |\n' +
      '|---|---:|---:|---:|---:|---:|---:|---:|\n',
  );
  for (const r of rows) {
    const [c, b] = [r.current, r.baseline];
    process.stdout.write(
      `| ${r.what} | ${r.ops} | ${f(c.perSecond, 0)} / ${f(b.perSecond, 0)} | ${f(c.p50)} / ${f(b.p50)} | ${f(c.p99)} / ${f(b.p99)} | ` +
        `${f(c.cpuPerOp, 2)} / ${f(b.cpuPerOp, 2)} | ${f(b.perSecond / c.perSecond, 2)} | ${f(c.cpuPerOp / b.cpuPerOp, 2)} |\n`,
    );
  }
}
