/**
 * `pnpm bench proxy`: calls through NATS + the proxy versus the plain MCP SDK client, side by side
 * in one run, against the same upstreams (the test MCP server's `echo` tool, Streamable HTTP, each
 * in a process of its own on loopback), in both protocol eras:
 *
 * - modern (2026-07-28, a `createMcpHandler` server that refuses the 2025 era): the direct SDK v2
 *   client (version negotiation auto), a raw HTTP client (undici, one POST of the JSON-RPC body
 *   with `_meta` and the standard headers: the floor), and NATS + the proxy; then the RSS of a
 *   fresh proxy process with 10,000 open runs on the modern server (it holds no sessions for them);
 * - legacy (2025-11-25, SDK v1 server, stateful sessions): the direct SDK v1 client and NATS + the
 *   proxy, as before.
 *
 * - sequential: 2,000 calls, one at a time; concurrent: 5,000 calls from 32 callers, each after
 *   1,500 calls not counted (one run, one
 *   session for the proxy; one SDK client for the direct side);
 * - calls/s, p50, p99; CPU per call of the proxy process (its `/stats` reports `process.cpuUsage`)
 *   and of this process while it runs the direct client;
 * - the proxy has validation, the grant check, the Redis-shared limits, tracing and metrics on;
 * - afterwards, the proxy's RSS with 1,000 legacy runs each holding one open connection (a session);
 * - MaxListenersExceededWarning is looked for in both processes;
 * - the floor of the NATS hop, in the same run: the runtime's ProxyClient to a responder in a
 *   process of its own that decodes the request and answers at once (no upstream, no proxy), and
 *   that hop followed by the raw undici POST (what a proxied call costs at the least: the two
 *   hops, each process's own minimum work, nothing else);
 * - the proxy against that floor in paired blocks, round by round (its blocks and the floor's next
 *   to each other, the order alternating): the median ratio at 32 callers and the median p50
 *   difference sequentially, with their middle halves (the phases run a minute apart, and the
 *   box's speed drifts more than the goal's margin within that);
 * - the call log (docs/activity.md) on and off, side by side: two more proxy processes at once,
 *   one recording (`ACTIVITY=on`, the default) and one not (`ACTIVITY=off`), each with a run of
 *   its own stuck to it, warmed in turns, then measured in turns (on, off, then off, on…) at 32
 *   callers on the modern server; the proxy's CPU per call of each (read after the log's flush
 *   interval, so each phase's writes count in it), the median of the turns' own ratios (goal:
 *   recording adds ≤ 2 %), and Postgres's CPU per call beside it. `BENCH_QUICK=1` runs it too
 *   (`PROXY_BENCH=activity` runs only it);
 * - `BENCH_BASELINE_ROOT=<checkout>`: this checkout's proxy and that checkout's, both from their
 *   sources, side by side in the same turns (`PROXY_BENCH=baseline` runs only that). `PROXY_BENCH=memory`
 *   runs only the modern memory leg (a fresh proxy, 10,000 open modern runs). `PROXY_BENCH=floor`
 *   runs only the paired floor comparison, for the proxy as it runs and for one with its call log
 *   off.
 */
import { createRequire } from 'node:module';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  Client,
  ModernClient,
  ModernStreamableHTTPClientTransport,
  StreamableHTTPClientTransport,
} from '../test/support/sdk-client.js';
import { startNatsEcho } from '../test/support/nats-echo.js';
import { matchingLog } from '../test/support/call-log-load.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../test/support/proxy-system.js';
import { ROOT } from '../test/support/system.js';
import { BENCH_PROXY_ENV, postgresCpuMs, runPhase, startEchoUpstream } from './support/measure.js';
import { benchServiceForm, fromSources } from './support/service-bundles.js';

// BENCH_QUICK=1: the modern rows only, fewer calls, no RSS phases (for iterating on the call path;
// the recorded figures come from the full run). It also prints the upstream process's CPU per call.
const QUICK = process.env.BENCH_QUICK === '1';
const SEQUENTIAL = QUICK ? 1_000 : 2_000;
const CONCURRENT = QUICK ? 3_000 : 5_000;
const CALLERS = 32;
/**
 * Calls before each measured phase, not counted. 1,500 (was 300): the proxy's V8 was still
 * compiling its hot paths through the modern phases, which run first (its compiler threads were a
 * quarter of the proxy's CPU there); what is measured is the steady state of a long-running proxy.
 */
const WARMUP = 1_500;
const RUNS_FOR_RSS = 1_000;
const MODERN_RUNS_FOR_RSS = 10_000;
const MODERN = '2026-07-28';

interface Phase {
  what: string;
  calls: number;
  seconds: number;
  p50: number;
  p99: number;
  cpuPerCallMs: number;
  /** The upstream server process's CPU per call (ms). */
  upstreamCpuPerCallMs: number;
}

const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;

async function proxyStats(
  p: ProxyProcess,
): Promise<{ cpu: NodeJS.CpuUsage; rss: number; connections: number; runs: number }> {
  return (await (await fetch(`${p.internalUrl}/stats`)).json()) as {
    cpu: NodeJS.CpuUsage;
    rss: number;
    connections: number;
    runs: number;
  };
}

type UndiciPool = {
  request(opts: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body: string;
  }): Promise<{ statusCode: number; body: { json(): Promise<unknown> } }>;
  close(): Promise<void>;
};

/** undici, as the outbound library declares it (the floor: one POST per call, keep-alive, nothing else). */
async function rawModernClient(
  url: string,
): Promise<{ call: (i: number) => Promise<unknown>; close: () => Promise<void> }> {
  const undiciPath = createRequire(join(ROOT, 'libs', 'outbound', 'package.json')).resolve('undici');
  const { Pool } = (await import(pathToFileURL(undiciPath).href)) as {
    Pool: new (origin: string, opts: { connections: number }) => UndiciPool;
  };
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CALLERS });
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    'mcp-name': 'echo',
  };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'bench-raw', version: '0' },
  };
  return {
    call: async (i) => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: `m${i}` }, _meta: meta },
      });
      const res = await pool.request({ method: 'POST', path: target.pathname, headers, body });
      const out = (await res.body.json()) as { result?: unknown };
      if (res.statusCode !== 200 || out.result === undefined) throw new Error(`raw call answered ${res.statusCode}`);
      return out;
    },
    close: () => pool.close(),
  };
}

/** Turns of each side in a side-by-side comparison (a, b, then b, a, …): even, so each side goes first as often. */
const TURNS = QUICK ? 4 : 6;
/** Sequential calls of each side in each turn of a side-by-side comparison, after its 32-caller phase. */
const SIDE_SEQUENTIAL = 300;
/**
 * After a side's 32-caller phase, this long before its CPU is read: past the call log's flush
 * interval (1 s by default), so the batch of the phase's last calls is written, and counted, in
 * the phase that made it (on the proxy and on Postgres).
 */
const SIDE_SETTLE_MS = 1_300;

interface Side {
  /** Names the side in the rows (`call log on`, `this code`, …). */
  label: string;
  proxy: ProxyProcess;
  /**
   * While this side runs, the bench writes one row to the call log for each of its calls, a batch
   * a second, as a recording proxy does: the side that does not record then loads Postgres (and
   * the box, whose two cores everything shares) as the side that does, and the comparison reads
   * what recording costs the proxy itself.
   */
  matchLog?: boolean;
}

/** One side's figures over the turns of {@link sideBySide}. */
interface SideFigures {
  /** Mean over the turns: proxy CPU per call (ms), calls/s, Postgres CPU per call (ms). */
  cpu: number;
  rate: number;
  pgCpu: number;
  /** Median over the turns of the sequential p50 (ms). */
  seqP50: number;
}

/**
 * Two proxy processes side by side on the same system and upstream, each with a run of its own
 * stuck to it, measured in turns at 32 callers on the modern server, then 300 calls one at a time:
 * the only comparison of two proxies that a shared, noisy box allows. Both are warmed in turns
 * first (a proxy's V8 still compiles its hot paths after 1,500 calls: the first turn read a third
 * above the last). The order alternates from turn to turn over an even number of turns (the side
 * that runs second in a turn was favoured). Returns the rows, each side's figures, and the median
 * and middle half of the turns' own CPU ratios (side 0 / side 1, each pair of phases a few
 * seconds apart: the box's drift over the run cancels there, not in the means).
 */
async function sideBySide(
  system: ProxySystem,
  sides: [Side, Side],
): Promise<{ rows: string[]; mean: SideFigures[]; cpuRatio: { median: number; low: number; high: number } }> {
  const rowOf = (p: Phase & { pgCpu: number }): string =>
    `| ${p.what} | ${p.calls} | ${(p.calls / p.seconds).toFixed(0)} | ${p.p50.toFixed(3)} | ${p.p99.toFixed(3)} | ${Number.isNaN(p.cpuPerCallMs) ? '-' : p.cpuPerCallMs.toFixed(3)} | ${Number.isNaN(p.pgCpu) ? '-' : p.pgCpu.toFixed(3)} |`;
  const run = (i: number) => `side-${i}`;
  sides.forEach((side, i) => system.client.stick(run(i), side.proxy.instance));
  const call = (r: string) => (i: number) => system.call('magent', r, 'mbench__echo', { text: `m${i}` });
  const log = sides.some((s) => s.matchLog) ? matchingLog(system) : undefined;
  const counted = (i: number) => {
    const f = call(run(i));
    return sides[i]!.matchLog ? (k: number) => f(k).finally(() => log!.count()) : f;
  };
  for (let round = 0; round < 2; round++)
    for (let i = 0; i < sides.length; i++) await runPhase(WARMUP, CALLERS, call(run(i)));
  await new Promise((r) => setTimeout(r, SIDE_SETTLE_MS));
  const phases: Array<Phase & { side: number; turn: number; pgCpu: number }> = [];
  const sequential: Array<{ side: number; p50: number }> = [];
  for (let turn = 0; turn < TURNS; turn++) {
    for (const i of turn % 2 === 0 ? [0, 1] : [1, 0]) {
      const p = sides[i]!.proxy;
      const before = (await proxyStats(p)).cpu;
      const pgBefore = postgresCpuMs();
      if (sides[i]!.matchLog) log!.start();
      const r = await runPhase(CONCURRENT, CALLERS, counted(i));
      if (sides[i]!.matchLog) await log!.stop();
      await new Promise((res) => setTimeout(res, SIDE_SETTLE_MS));
      const after = (await proxyStats(p)).cpu;
      const pgAfter = postgresCpuMs();
      phases.push({
        what: `modern: NATS + proxy, ${CALLERS} callers, ${sides[i]!.label} (turn ${turn + 1})`,
        calls: CONCURRENT,
        ...r,
        cpuPerCallMs: (cpuMs(after) - cpuMs(before)) / CONCURRENT,
        upstreamCpuPerCallMs: 0,
        pgCpu: (pgAfter - pgBefore) / CONCURRENT,
        side: i,
        turn,
      });
      const seq = await runPhase(SIDE_SEQUENTIAL, 1, call(run(i)));
      sequential.push({ side: i, p50: seq.p50 });
      phases.push({
        what: `modern: NATS + proxy, sequential, ${sides[i]!.label} (turn ${turn + 1})`,
        calls: SIDE_SEQUENTIAL,
        ...seq,
        cpuPerCallMs: Number.NaN,
        upstreamCpuPerCallMs: 0,
        pgCpu: Number.NaN,
        side: i,
        turn,
      });
    }
  }
  await log?.close();
  const concurrent = phases.filter((p) => p.calls === CONCURRENT);
  const mean = sides.map((_, i): SideFigures => {
    const ps = concurrent.filter((p) => p.side === i);
    const avg = (f: (p: (typeof ps)[number]) => number): number => ps.reduce((n, p) => n + f(p), 0) / ps.length;
    const p50s = sequential.filter((s) => s.side === i).map((s) => s.p50);
    return {
      cpu: avg((p) => p.cpuPerCallMs),
      rate: avg((p) => p.calls / p.seconds),
      pgCpu: avg((p) => p.pgCpu),
      seqP50: [...p50s].sort((a, b) => a - b)[Math.floor(p50s.length / 2)]!,
    };
  });
  const ratios = Array.from({ length: TURNS }, (_, turn) => {
    const [a, b] = [0, 1].map((i) => concurrent.find((p) => p.turn === turn && p.side === i)!.cpuPerCallMs);
    return a! / b!;
  }).sort((x, y) => x - y);
  const at = (q: number): number => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))]!;
  const median = ratios.length % 2 === 0 ? (ratios[ratios.length / 2 - 1]! + ratios[ratios.length / 2]!) / 2 : at(0.5);
  const rows = [
    '',
    '| phase | calls | calls/s | p50 ms | p99 ms | CPU ms/call (proxy process) | Postgres CPU ms/call |',
    '|---|---|---|---|---|---|---|',
    ...phases.map(rowOf),
    '',
  ];
  return { rows, mean, cpuRatio: { median, low: at(0.25), high: at(0.75) } };
}

/** `BENCH_PROFILE=<dir>`: node's arguments for a V8 CPU profile of one side's proxy, written to `<dir>/<side>` when it stops. */
const profileArgs = (side: string): string[] => {
  const dir = process.env.BENCH_PROFILE;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, side)}`] : [];
};

/** The call log on and off, side by side: see the header. Returns the report's lines. */
async function activityComparison(system: ProxySystem): Promise<string[]> {
  const on = await spawnProxyProcess(system, { ACTIVITY: 'on' }, profileArgs('call-log-on'));
  const off = await spawnProxyProcess(system, { ACTIVITY: 'off' }, profileArgs('call-log-off'));
  try {
    const { rows, mean, cpuRatio } = await sideBySide(system, [
      { label: 'call log on', proxy: on },
      { label: 'call log off', proxy: off, matchLog: true },
    ]);
    const [m0, m1] = [mean[0]!, mean[1]!];
    const pct = (r: number): string => `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)} %`;
    return [
      ...rows,
      `call log, ${CALLERS} callers, ${TURNS} turns each: proxy CPU per call on / off, median of the turns ${pct(cpuRatio.median)} (middle half ${pct(cpuRatio.low)} to ${pct(cpuRatio.high)}; goal ≤ 2 %); means on ${m0.cpu.toFixed(3)} ms, off ${m1.cpu.toFixed(3)} ms (${pct(m0.cpu / m1.cpu)}); calls/s on / off = ${(m0.rate / m1.rate).toFixed(3)}; Postgres CPU per call on ${m0.pgCpu.toFixed(3)} ms, off ${m1.pgCpu.toFixed(3)} ms (off: the bench writes as many rows while it runs, so both sides load Postgres and the box alike; this is what the database spends on the log)`,
    ];
  } finally {
    await on.stop();
    await off.stop();
  }
}

/**
 * `BENCH_BASELINE_ROOT=<checkout>`: this checkout's proxy and another checkout's (a worktree of the
 * commit before a change, its dependencies installed), both from their sources, side by side (see
 * {@link sideBySide}). `PROXY_BENCH=baseline` runs only this comparison.
 */
async function baselineComparison(system: ProxySystem, baselineRoot: string): Promise<string[]> {
  const mine = await spawnProxyProcess(system, {}, [], ROOT);
  const base = await spawnProxyProcess(system, {}, [], baselineRoot);
  try {
    const { rows, mean, cpuRatio } = await sideBySide(system, [
      { label: 'this code', proxy: mine },
      { label: 'baseline', proxy: base },
    ]);
    const [m0, m1] = [mean[0]!, mean[1]!];
    const gap = m0.seqP50 - m1.seqP50;
    return [
      ...rows,
      `this code / baseline, ${CALLERS} callers, ${TURNS} turns each: proxy CPU per call, median of the turns ${cpuRatio.median.toFixed(3)}× (middle half ${cpuRatio.low.toFixed(3)}× to ${cpuRatio.high.toFixed(3)}×); means ${m0.cpu.toFixed(3)} / ${m1.cpu.toFixed(3)} ms = ${(m0.cpu / m1.cpu).toFixed(3)}×; calls/s ${(m0.rate / m1.rate).toFixed(3)}×; sequential p50 (median of the turns) ${m0.seqP50.toFixed(3)} / ${m1.seqP50.toFixed(3)} ms = ${(gap >= 0 ? '+' : '') + gap.toFixed(3)} ms`,
    ];
  } finally {
    await mine.stop();
    await base.stop();
  }
}

interface MemoryStats {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  runs: number;
  connections: number;
  collected?: boolean;
}

const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);
const split = (m: MemoryStats): string =>
  `RSS ${mib(m.rss)} MiB (JS heap ${mib(m.heapUsed)} used of ${mib(m.heapTotal)}, external ${mib(m.external)})`;

/**
 * The modern memory goal's measure: a fresh proxy process (started with `--expose-gc`, which
 * changes nothing until a collection is asked for), warmed with the modern calls, then 10,000
 * open runs on the modern server, none of them ended. The goal's figure is the RSS as it stands,
 * with no collection forced (it depends on when V8 last collected and how far its heap grew);
 * then, apart, the same after a full collection (`/stats/collected`): what is live.
 */
async function modernMemoryLeg(
  system: ProxySystem,
  form = 'this form',
  spawnIt: (start: () => Promise<ProxyProcess>) => Promise<ProxyProcess> = (start) => start(),
): Promise<{ proxy: ProxyProcess; lines: string[] }> {
  const p = await spawnIt(() => spawnProxyProcess(system, {}, ['--expose-gc']));
  const at = async (path: string): Promise<MemoryStats> =>
    (await (await fetch(`${p.internalUrl}${path}`)).json()) as MemoryStats;
  await runPhase(WARMUP, CALLERS, (i) => system.call('magent', 'mwarm-run', 'mbench__echo', { text: `m${i}` }));
  const warmed = await at('/stats');
  await runPhase(MODERN_RUNS_FOR_RSS, 50, (i) => system.call('magent', `mrss-${i}`, 'mbench__echo', { text: 'x' }));
  const loaded = await at('/stats');
  const collected = await at('/stats/collected');
  if (collected.collected !== true) throw new Error('the proxy did not run a full collection (--expose-gc)');
  return {
    proxy: p,
    lines: [
      `modern, proxy RSS (a fresh proxy process, ${form}): ${mib(warmed.rss)} MiB warmed up, ${mib(loaded.rss)} MiB with ${loaded.runs} open runs / ${loaded.connections} open connections (goal ≤ 250 MiB with 10,000 runs)`,
      `modern, proxy memory (${form}): warmed up ${split(warmed)}; with the runs ${split(loaded)}; then after a forced full collection ${split(collected)}`,
    ],
  };
}

/** Rounds of paired blocks (`pnpm bench proxy`'s floor comparison): QUICK 10, else 20. */
const PAIRED_ROUNDS = QUICK ? 10 : 20;
const PAIRED_CONCURRENT = 600;
const PAIRED_SEQUENTIAL = 100;

/**
 * The proxy against the NATS echo + raw POST floor, round by round: in each round a block of
 * `PAIRED_CONCURRENT` calls at 32 callers and one of `PAIRED_SEQUENTIAL` sequential calls through
 * each, the order alternating between rounds so that neither side always follows the other. Each
 * round's ratio (throughput) or difference (p50) pairs two blocks that saw the same moment of the
 * box; the lines give their median and middle half, and the proxy's CPU per call in its blocks.
 */
async function pairedWithFloor(
  proxied: (i: number) => Promise<unknown>,
  floor: (i: number) => Promise<unknown>,
  proxy: ProxyProcess,
): Promise<string[]> {
  const ratios: number[] = [];
  const gaps: number[] = [];
  let proxyCpu = 0;
  let proxyCalls = 0;
  for (let round = 0; round < PAIRED_ROUNDS; round++) {
    const sides = round % 2 === 0 ? (['proxy', 'floor'] as const) : (['floor', 'proxy'] as const);
    const rate: Record<string, number> = {};
    const p50: Record<string, number> = {};
    for (const side of sides) {
      const op = side === 'proxy' ? proxied : floor;
      const before = side === 'proxy' ? (await proxyStats(proxy)).cpu : undefined;
      const c = await runPhase(PAIRED_CONCURRENT, CALLERS, op);
      const s = await runPhase(PAIRED_SEQUENTIAL, 1, op);
      if (before !== undefined) {
        proxyCpu += cpuMs((await proxyStats(proxy)).cpu) - cpuMs(before);
        proxyCalls += PAIRED_CONCURRENT + PAIRED_SEQUENTIAL;
      }
      rate[side] = PAIRED_CONCURRENT / c.seconds;
      p50[side] = s.p50;
    }
    ratios.push(rate.proxy! / rate.floor!);
    gaps.push(p50.proxy! - p50.floor!);
  }
  const spread = (xs: number[]): { median: number; low: number; high: number } => {
    const v = [...xs].sort((a, b) => a - b);
    const at = (q: number): number => v[Math.min(v.length - 1, Math.floor(q * v.length))]!;
    return { median: at(0.5), low: at(0.25), high: at(0.75) };
  };
  const r = spread(ratios);
  const g = spread(gaps);
  const f = (n: number): string => n.toFixed(3);
  return [
    `floor, paired blocks (${PAIRED_ROUNDS} rounds, each ${PAIRED_CONCURRENT} calls at ${CALLERS} callers and ${PAIRED_SEQUENTIAL} sequential through the proxy and through the floor, order alternating): ${CALLERS} callers proxy / floor median ${f(r.median)} (middle half ${f(r.low)} to ${f(r.high)}; goal ≥ 1.0); sequential p50 proxy − floor median ${f(g.median)} ms (middle half ${f(g.low)} to ${f(g.high)}; goal ≤ 0.3); the proxy's CPU per call in its blocks ${f(proxyCpu / proxyCalls)} ms`,
  ];
}

async function main(): Promise<void> {
  process.stdout.write(`${await benchServiceForm()}\n`);
  const warnings: string[] = [];
  process.on('warning', (w) => warnings.push(`${w.name}: ${w.message}`));
  const upstream = await startEchoUpstream('legacy');
  const modernUp = await startEchoUpstream('modern');
  const system = await ProxySystem.start({ proxies: 0, env: { ...BENCH_PROXY_ENV } });
  // BENCH_PROFILE=<dir>: the proxy writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profileDir = process.env.BENCH_PROFILE;
  const proxy = await spawnProxyProcess(system, {}, profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
  const direct = new Client({ name: 'bench-direct', version: '0' });
  const directModern = new ModernClient(
    { name: 'bench-direct-v2', version: '0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  const raw = await rawModernClient(modernUp.url);
  const echo = await startNatsEcho();
  let fresh: ProxyProcess | undefined;
  try {
    await system.setServer('bench', upstream.url);
    await system.createAgent('agent', ['bench'], 1);
    await system.setServer('mbench', modernUp.url);
    await system.createAgent('magent', ['mbench'], 1);
    await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url)));
    await directModern.connect(new ModernStreamableHTTPClientTransport(new URL(modernUp.url)));
    if (directModern.getProtocolEra() !== 'modern')
      throw new Error('the modern upstream was not reached in the modern era');
    const only = process.env.PROXY_BENCH;
    if (only === 'activity' || only === 'baseline') {
      const baselineRoot = process.env.BENCH_BASELINE_ROOT;
      if (only === 'baseline' && baselineRoot === undefined)
        throw new Error('PROXY_BENCH=baseline needs BENCH_BASELINE_ROOT');
      const lines =
        only === 'activity' ? await activityComparison(system) : await baselineComparison(system, baselineRoot!);
      process.stdout.write(
        `machine: ${availableParallelism()} cores, node ${process.version}, ${new Date().toISOString()}\n${lines.join('\n')}\n`,
      );
      return;
    }

    if (only === 'memory') {
      // The modern memory goal's measure alone, as below: a fresh proxy warmed, then 10,000 open
      // modern runs; then the same from the sources through tsx (the form's own share).
      await proxy.stop();
      const leg = await modernMemoryLeg(system, process.env.BENCH_FROM_SOURCES === '1' ? 'sources' : 'bundle');
      await leg.proxy.stop();
      const sources =
        process.env.BENCH_FROM_SOURCES === '1' ? undefined : await modernMemoryLeg(system, 'sources', fromSources);
      fresh = sources?.proxy;
      process.stdout.write(
        `machine: ${availableParallelism()} cores, node ${process.version}, ${new Date().toISOString()}\n${[...leg.lines, ...(sources?.lines ?? [])].join('\n')}\n`,
      );
      return;
    }

    const directCall = (i: number) => direct.callTool({ name: 'echo', arguments: { text: `m${i}` } });
    const proxiedCall = (i: number) => system.call('agent', 'bench-run', 'bench__echo', { text: `m${i}` });

    const modernDirectCall = (i: number) => directModern.callTool({ name: 'echo', arguments: { text: `m${i}` } });
    const modernProxiedCall = (i: number) => system.call('magent', 'mbench-run', 'mbench__echo', { text: `m${i}` });

    // The floor: the same runtime client and payload as a proxied call, to the echo responder; then that hop and the raw POST, one after the other.
    const echoCall = (i: number) =>
      echo.client.call({
        account: 'a',
        agent: 'magent',
        run: 'echo-run',
        tool: 'mbench__echo',
        arguments: { text: `m${i}` },
      });
    const plainEchoCall = (i: number) => echo.plain({ text: `m${i}` });
    const echoThenRaw = async (i: number) => {
      await echoCall(i);
      return raw.call(i);
    };

    if (only === 'floor') {
      // The floor comparison alone, twice: the proxy as it runs (its call log on) and a proxy
      // whose call log is off, each against the same floor in paired blocks: how much of the gap
      // is the log's (its inserts share the box's cores with everything else).
      const off = await spawnProxyProcess(system, { ACTIVITY: 'off' });
      try {
        system.client.stick('mbench-run', proxy.instance);
        system.client.stick('mbench-off', off.instance);
        const offCall = (i: number) => system.call('magent', 'mbench-off', 'mbench__echo', { text: `m${i}` });
        for (const op of [modernProxiedCall, offCall, echoThenRaw]) await runPhase(WARMUP, CALLERS, op);
        const withLog = await pairedWithFloor(modernProxiedCall, echoThenRaw, proxy);
        const withoutLog = await pairedWithFloor(offCall, echoThenRaw, off);
        process.stdout.write(
          `machine: ${availableParallelism()} cores, node ${process.version}, ${new Date().toISOString()}\n${[
            ...withLog.map((l) => `call log on (as it runs): ${l}`),
            ...withoutLog.map((l) => `call log off: ${l}`),
          ].join('\n')}\n`,
        );
      } finally {
        await off.stop();
      }
      return;
    }

    const phases: Phase[] = [];
    const upstreamOf = (what: string): (() => number) =>
      what.startsWith('NATS echo') ? () => echo.cpuMs() : what.startsWith('modern') ? modernUp.cpuMs : upstream.cpuMs;
    const measureDirect = async (
      what: string,
      total: number,
      conc: number,
      op: (i: number) => Promise<unknown> = directCall,
    ): Promise<Phase> => {
      await runPhase(WARMUP, conc, op);
      const before = process.cpuUsage();
      const upBefore = upstreamOf(what)();
      const r = await runPhase(total, conc, op);
      const phase = {
        what,
        calls: total,
        ...r,
        cpuPerCallMs: cpuMs(process.cpuUsage(before)) / total,
        upstreamCpuPerCallMs: (upstreamOf(what)() - upBefore) / total,
      };
      phases.push(phase);
      return phase;
    };
    const measureProxied = async (
      what: string,
      total: number,
      conc: number,
      op: (i: number) => Promise<unknown> = proxiedCall,
    ): Promise<{ clientCpuPerCallMs: number }> => {
      await runPhase(WARMUP, conc, op);
      const before = (await proxyStats(proxy)).cpu;
      const clientBefore = process.cpuUsage();
      const upBefore = upstreamOf(what)();
      const r = await runPhase(total, conc, op);
      const clientCpu = cpuMs(process.cpuUsage(clientBefore));
      const upstreamCpuPerCallMs = (upstreamOf(what)() - upBefore) / total;
      const after = (await proxyStats(proxy)).cpu;
      phases.push({
        what,
        calls: total,
        ...r,
        cpuPerCallMs: (cpuMs(after) - cpuMs(before)) / total,
        upstreamCpuPerCallMs,
      });
      return { clientCpuPerCallMs: clientCpu / total };
    };

    // Modern era first: direct SDK v2, the raw floor, the proxy; sequential, then 32 callers.
    const mds = await measureDirect('modern: direct SDK v2, sequential', SEQUENTIAL, 1, modernDirectCall);
    const mrs = await measureDirect('modern: raw undici POST, sequential', SEQUENTIAL, 1, raw.call);
    const mseqClient = await measureProxied('modern: NATS + proxy, sequential', SEQUENTIAL, 1, modernProxiedCall);
    const mps = phases.at(-1)!;
    const mdc = await measureDirect(`modern: direct SDK v2, ${CALLERS} callers`, CONCURRENT, CALLERS, modernDirectCall);
    const mrc = await measureDirect(`modern: raw undici POST, ${CALLERS} callers`, CONCURRENT, CALLERS, raw.call);
    const mconcClient = await measureProxied(
      `modern: NATS + proxy, ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      modernProxiedCall,
    );
    const mpc = phases.at(-1)!;
    // The floor (the "upstream CPU" column of the echo rows is the responder's).
    const es = await measureDirect('NATS echo (runtime ProxyClient, no proxy), sequential', SEQUENTIAL, 1, echoCall);
    const eps = await measureDirect('NATS echo (plain nats.js request), sequential', SEQUENTIAL, 1, plainEchoCall);
    const ers = await measureDirect('modern: NATS echo + raw undici POST, sequential', SEQUENTIAL, 1, echoThenRaw);
    const ec = await measureDirect(
      `NATS echo (runtime ProxyClient, no proxy), ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      echoCall,
    );
    const epc = await measureDirect(
      `NATS echo (plain nats.js request), ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      plainEchoCall,
    );
    const erc = await measureDirect(
      `modern: NATS echo + raw undici POST, ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      echoThenRaw,
    );
    // The proxy against its floor in paired blocks (the phases above run a minute apart, and this
    // box's speed drifts within that): each round one block through the proxy and one through the
    // floor, in alternating order, at 32 callers and sequentially.
    const paired = await pairedWithFloor(modernProxiedCall, echoThenRaw, proxy);
    const fmt = (n: number, d = 2): string => n.toFixed(d);
    const rate = (p: Phase): number => p.calls / p.seconds;
    const header = [
      `machine: ${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
      '',
      '| phase | calls | calls/s | p50 ms | p99 ms | CPU ms/call (proxy process, or the direct client) | upstream CPU ms/call |',
      '|---|---|---|---|---|---|---|',
    ];
    const rowOf = (p: Phase): string =>
      `| ${p.what} | ${p.calls} | ${fmt(p.calls / p.seconds, 0)} | ${fmt(p.p50, 3)} | ${fmt(p.p99, 3)} | ${fmt(p.cpuPerCallMs, 3)} | ${fmt(p.upstreamCpuPerCallMs, 3)} |`;
    const modernSummary = [
      `modern, ${CALLERS} callers: proxy / direct SDK v2 = ${fmt(rate(mpc) / rate(mdc), 3)} (goal ≥ 1.0); proxy / raw = ${fmt(rate(mpc) / rate(mrc), 3)} (goal ≥ 0.8)`,
      `modern, sequential p50: proxy − raw = ${fmt(mps.p50 - mrs.p50, 3)} ms (goal ≤ 0.3); proxy − direct SDK v2 = ${fmt(mps.p50 - mds.p50, 3)} ms`,
      `modern, proxy CPU per call: sequential ${fmt(mps.cpuPerCallMs, 3)} ms, ${CALLERS} callers ${fmt(mpc.cpuPerCallMs, 3)} ms (goal ≤ 0.3); direct SDK v2 client ${fmt(mds.cpuPerCallMs, 3)} / ${fmt(mdc.cpuPerCallMs, 3)} ms, raw ${fmt(mrs.cpuPerCallMs, 3)} / ${fmt(mrc.cpuPerCallMs, 3)} ms`,
      `modern, runtime-side NATS client CPU per call (this process): sequential ${fmt(mseqClient.clientCpuPerCallMs, 3)} ms, ${CALLERS} callers ${fmt(mconcClient.clientCpuPerCallMs, 3)} ms`,
      `floor, the NATS hop alone (runtime client → NATS → echo responder → back): sequential p50 ${fmt(es.p50, 3)} ms, ${fmt(rate(es), 0)} calls/s at 1, ${fmt(rate(ec), 0)} at ${CALLERS} callers`,
      `floor, what the runtime's ProxyClient adds to a plain nats.js request (CPU of this process per call): sequential ${fmt(es.cpuPerCallMs - eps.cpuPerCallMs, 3)} ms (${fmt(es.cpuPerCallMs, 3)} vs ${fmt(eps.cpuPerCallMs, 3)}), ${CALLERS} callers ${fmt(ec.cpuPerCallMs - epc.cpuPerCallMs, 3)} ms (${fmt(ec.cpuPerCallMs, 3)} vs ${fmt(epc.cpuPerCallMs, 3)}); p50 ${fmt(es.p50, 3)} vs ${fmt(eps.p50, 3)} ms`,
      `floor, NATS echo + raw POST: sequential p50 ${fmt(ers.p50, 3)} ms (raw + ${fmt(ers.p50 - mrs.p50, 3)} ms; the proxy's p50 is ${fmt(mps.p50 - ers.p50, 3)} ms above it); ${CALLERS} callers ${fmt(rate(erc), 0)} calls/s = ${fmt(rate(erc) / rate(mrc), 3)} × raw (proxy: ${fmt(rate(mpc) / rate(erc), 3)} × this floor)`,
      ...paired,
    ];
    const callLog = await activityComparison(system);
    const baselineRoot = process.env.BENCH_BASELINE_ROOT;
    if (baselineRoot !== undefined) callLog.push(...(await baselineComparison(system, baselineRoot)));
    if (QUICK) {
      process.stdout.write(`${[...header, ...phases.map(rowOf), '', ...modernSummary, ...callLog].join('\n')}\n`);
      return;
    }

    await measureDirect('direct SDK, sequential', SEQUENTIAL, 1);
    const seqClient = await measureProxied('NATS + proxy, sequential', SEQUENTIAL, 1);
    await measureDirect(`direct SDK, ${CALLERS} callers`, CONCURRENT, CALLERS);
    const concClient = await measureProxied(`NATS + proxy, ${CALLERS} callers`, CONCURRENT, CALLERS);

    // Resident memory with 1,000 runs, each holding one open connection (a session upstream).
    const rssBefore = (await proxyStats(proxy)).rss;
    await runPhase(RUNS_FOR_RSS, 50, (i) => system.call('agent', `rss-${i}`, 'bench__echo', { text: 'x' }));
    const loaded = await proxyStats(proxy);
    // Then the modern goal's own measure: a fresh proxy process (the one above holds 1,000 legacy
    // sessions and the heap the call phases grew), warmed with the same modern calls, then
    // 10,000 open runs on the modern server, none of them ended.
    await proxy.stop();
    const leg = await modernMemoryLeg(system);
    fresh = leg.proxy;

    const [ds, ps, dc, pc] = phases.slice(12) as [Phase, Phase, Phase, Phase];
    const proxyWarned = /MaxListenersExceeded/.test(proxy.logs.join(''));
    const directWarned = warnings.some((w) => /MaxListeners/.test(w));
    const out = [
      ...header,
      ...phases.map(rowOf),
      '',
      ...modernSummary,
      ...leg.lines,
      '',
      `legacy, sequential p50: proxy − direct = ${fmt(ps.p50 - ds.p50, 3)} ms (goal ≤ 0.35)`,
      `legacy, concurrent throughput: proxy / direct = ${fmt(pc.calls / pc.seconds / (dc.calls / dc.seconds), 3)} (goal ≥ 0.95)`,
      `proxy CPU per call vs direct client CPU per call: sequential ${fmt(ps.cpuPerCallMs, 3)} vs ${fmt(ds.cpuPerCallMs, 3)} ms; concurrent ${fmt(pc.cpuPerCallMs, 3)} vs ${fmt(dc.cpuPerCallMs, 3)} ms (goal ≤)`,
      `runtime-side NATS client CPU per call (this process): sequential ${fmt(seqClient.clientCpuPerCallMs, 3)} ms, concurrent ${fmt(concClient.clientCpuPerCallMs, 3)} ms`,
      `proxy calls/s per core (concurrent calls / proxy CPU seconds): ${fmt(1000 / pc.cpuPerCallMs, 0)}`,
      `proxy RSS: ${fmt(rssBefore / 2 ** 20, 1)} MiB before, ${fmt(loaded.rss / 2 ** 20, 1)} MiB with ${loaded.runs} runs / ${loaded.connections} open connections`,
      `MaxListenersExceededWarning in the proxy: ${proxyWarned ? 'SEEN' : 'none'}; in this process (the plain SDK client, the baseline): ${directWarned ? 'seen' : 'none'}`,
      ...callLog,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await direct.close().catch(() => undefined);
    await directModern.close().catch(() => undefined);
    await raw.close().catch(() => undefined);
    await echo.stop();
    await proxy.stop();
    await fresh?.stop();
    await system.stop();
    upstream.stop();
    modernUp.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
