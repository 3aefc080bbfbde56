/**
 * `pnpm bench endpoint`: calls through the agent MCP endpoint versus the same client calling the
 * remote server directly, side by side in one run, against the same upstream (the test MCP
 * server's `echo` tool, in a process of its own on loopback), in both protocol eras:
 *
 * - modern (2026-07-28): an SDK v2 client, direct to a modern-only upstream, and through the
 *   endpoint (its own process, `createMcpHandler`) → NATS → the proxy (its own process) → the
 *   same upstream;
 * - legacy (2025-11-25): an SDK v1 client, direct to a legacy upstream (stateful sessions), and
 *   through the endpoint's stateless legacy serving → NATS → the proxy → the same upstream.
 *
 * Sequential: 1,000 calls one at a time (p50, p99); concurrent: 3,000 calls from 32 callers on one
 * client (calls/s). The goals: at 32 concurrent, the endpoint keeps ≥ 0.8× the direct
 * throughput; sequential p50 within +1 ms of direct. CPU per call of the endpoint and the proxy
 * processes is read from /proc. Every rule is on in the path (token check, validation, grant,
 * limits set high, tracing and metrics). `ENDPOINT_LEAN_CALLS=off` in the environment serves every
 * request through the SDK's handler (the lean tools/call path is on by default), to compare the two.
 *
 * The floor of this architecture, in the same run: a bare relay (test/support/bare-relay.ts: a
 * `node:http` server that decodes the body and sends it over NATS to a responder in a process of
 * its own that POSTs it with undici) between the same client and the same upstream. Its goals:
 * at 32 callers the endpoint keeps ≥ 0.8× the relay's throughput; endpoint + proxy CPU per call
 * ≤ 1.5× relay + responder; sequential p50 ≤ the relay's + 0.5 ms, read also from the three
 * paths' sequential calls interleaved in blocks, which share the box's moment (`BENCH_INTERLEAVED`),
 * and the 32-caller goals from paired blocks of the relay and the endpoint (`BENCH_PAIRED_ROUNDS`),
 * whose CPU is also split between the processes' main threads and their helper threads (V8's
 * garbage collector and compiler). `BENCH_QUICK=1`: the modern rows only.
 *
 * Spans: the services run with no span exporter, as the bare relay, so their spans carry only their
 * context and record nothing (docs/operations.md#trace-context). `BENCH_TRACES=exported` gives the
 * endpoint and the proxy an OTLP exporter to a loopback sink in this process, which takes and
 * drops what they send: every span recorded and exported, what tracing costs a deployment.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  ModernClient,
  ModernStreamableHTTPClientTransport,
  StreamableHTTPClientTransport,
} from '../test/support/sdk-client.js';
import { startBareRelay, type BareRelay } from '../test/support/bare-relay.js';
import { ProxySystem, spawnProxyProcess, type ProxyProcess } from '../test/support/proxy-system.js';
import { ROOT } from '../test/support/system.js';
import {
  BENCH_PROXY_ENV,
  processCpuMs as cpuOf,
  mainThreadCpuMs,
  runPhase as run,
  startEchoUpstream as startUpstream,
} from './support/measure.js';
import { startServiceProcess, type ServiceProcess } from './support/service-process.js';
import { benchServiceForm } from './support/service-bundles.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 1_000);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 3_000);
const CALLERS = 32;
/**
 * The sequential comparison interleaved: blocks of this many calls, direct, through the relay and
 * through the endpoint in turn, so the three see the same box (a shared box's load moves within
 * a minute, and the phases above run one after another). `BENCH_INTERLEAVED=0` leaves it out.
 */
const INTERLEAVED = Number(process.env.BENCH_INTERLEAVED ?? 3_000);
const BLOCK = 100;
/**
 * The 32-caller comparison paired: this many rounds (`BENCH_PAIRED_ROUNDS`, 0 leaves it out), each
 * a block of {@link PAIRED_BLOCK} calls through the relay and one through the endpoint, the order
 * alternating between rounds; throughput and the gateway's CPU are read per block.
 */
const PAIRED_ROUNDS = Number(process.env.BENCH_PAIRED_ROUNDS ?? (QUICK ? 10 : 20));
const PAIRED_BLOCK = 600;
// Enough for the endpoint's and the proxy's V8 to have compiled their hot paths before a phase is measured
// (bench/proxy.ts found 300 too few: compiler threads were a quarter of the proxy's CPU in the first phases).
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1_500);

/**
 * `BENCH_PROFILE=<dir>`: the endpoint, the proxy, the bare relay and its responder each write a V8
 * CPU profile when they stop, in `<dir>/<role>` (the main thread's is the `.0.` file).
 */
function profileArgs(role: 'endpoint' | 'proxy' | 'relay' | 'responder'): string[] {
  const dir = process.env.BENCH_PROFILE;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, role)}`] : [];
}

/**
 * `BENCH_BASELINE_ROOT=<checkout>`: a second endpoint, run from another checkout of the project
 * (e.g. a worktree of the commit before a change, its dependencies installed), on the same system,
 * proxy and upstreams, measured in the same run as this checkout's: the comparison of two codes
 * that a shared, noisy box allows; and the two endpoints in paired blocks, the order alternating
 * (the round-by-round median of their CPU ratio is the figure to read: the separate phases run one
 * after the other and lean with the box's drift). Absent: no baseline rows.
 */
const BASELINE_ROOT = process.env.BENCH_BASELINE_ROOT;

async function startEndpointProcess(system: ProxySystem, root = ROOT): Promise<ServiceProcess> {
  return await startServiceProcess({
    root,
    service: 'endpoint',
    label: 'endpoint-bench',
    env: { ...system.env, LOG_LEVEL: 'warn' },
    nodeArgs: root === ROOT ? profileArgs('endpoint') : [],
    timeoutMs: 60_000,
  });
}

interface Row {
  what: string;
  calls: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU ms per call: this process (the client), the upstream's, and for endpoint rows the endpoint's and the proxy's processes (the relay's and the responder's for relay rows). */
  cpu: string;
  /** The CPU ms per call of the processes measured, summed (the nats-server's is not: it may be shared). */
  cpuTotal: number;
  /** The CPU ms per call of the gateway's own two processes (endpoint + proxy, or relay + responder). */
  cpuGateway: number;
}

/** The endpoint's figures against the bare relay's, as the goals read them. */
function floorLines(era: string, viaSeq: Row, viaConc: Row, relaySeq: Row, relayConc: Row): string[] {
  const f = (n: number, d = 2): string => n.toFixed(d);
  const tput = viaConc.perSecond / relayConc.perSecond;
  const cpu = viaConc.cpuGateway / relayConc.cpuGateway;
  const cpuSeq = viaSeq.cpuGateway / relaySeq.cpuGateway;
  const p50 = viaSeq.p50 - relaySeq.p50;
  return [
    `- ${era}: ${CALLERS} callers ${f(tput)}× the relay's throughput (goal ≥ 0.8: ${tput >= 0.8 ? 'met' : 'NOT met'}); ` +
      `endpoint + proxy CPU ${f(viaConc.cpuGateway, 3)} ms/call = ${f(cpu)}× relay + responder's ${f(relayConc.cpuGateway, 3)} (goal ≤ 1.5: ${cpu <= 1.5 ? 'met' : 'NOT met'}; sequential ${f(cpuSeq)}×); ` +
      `sequential p50 ${f(viaSeq.p50, 3)} ms = relay's ${f(relaySeq.p50, 3)} + ${f(p50, 3)} ms (goal ≤ +0.5: ${p50 <= 0.5 ? 'met' : 'NOT met'})`,
  ];
}

/** This checkout's endpoint against the baseline checkout's, same run: the endpoint process's own CPU per call, throughput, p50. */
function baselineLines(era: string, viaSeq: Row, viaConc: Row, baseSeq: Row, baseConc: Row): string[] {
  const endpointMs = (r: Row): number => Number(/endpoint ([0-9.]+)/.exec(r.cpu)?.[1] ?? NaN);
  const f = (n: number, d = 2): string => n.toFixed(d);
  return [
    `- ${era} against the baseline endpoint (${BASELINE_ROOT}): endpoint CPU per call ${f(endpointMs(viaConc), 3)} vs ${f(endpointMs(baseConc), 3)} ms at ${CALLERS} callers (${f(endpointMs(viaConc) / endpointMs(baseConc))}×), ` +
      `${f(endpointMs(viaSeq), 3)} vs ${f(endpointMs(baseSeq), 3)} sequential (${f(endpointMs(viaSeq) / endpointMs(baseSeq))}×); throughput ${f(viaConc.perSecond / baseConc.perSecond)}×; sequential p50 ${f(viaSeq.p50 - baseSeq.p50, 3)} ms`,
  ];
}

const median = (l: readonly number[]): number => [...l].sort((a, b) => a - b)[Math.floor(l.length / 2)]!;

/** The paths' sequential latencies, their blocks of {@link BLOCK} calls taken in turn. */
interface Interleaved {
  /** Each path's p50 over all its calls. */
  p50: Record<string, number>;
  /** Each path's p50 of each round (one block of every path, next to each other in time). */
  rounds: Record<string, number[]>;
}

async function interleaved(
  total: number,
  paths: Record<string, (i: number) => Promise<unknown>>,
): Promise<Interleaved> {
  const latencies: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
  const rounds: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
  for (let done = 0; done < total; done += BLOCK)
    for (const [name, op] of Object.entries(paths)) {
      const block: number[] = [];
      for (let i = done; i < Math.min(done + BLOCK, total); i++) {
        const t = performance.now();
        await op(i);
        block.push(performance.now() - t);
      }
      latencies[name]!.push(...block);
      rounds[name]!.push(median(block));
    }
  return { p50: Object.fromEntries(Object.entries(latencies).map(([k, l]) => [k, median(l)])), rounds };
}

/**
 * The gap of `a` over `b` round by round (their blocks ran next to each other, so each difference
 * is paired): its median and the middle half of the rounds, the spread one run's reading has.
 */
function pairedGap(mix: Interleaved, a: string, b: string): { median: number; low: number; high: number; n: number } {
  const gaps = mix.rounds[a]!.map((x, i) => x - mix.rounds[b]![i]!).sort((x, y) => x - y);
  const at = (q: number): number => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))]!;
  return { median: at(0.5), low: at(0.25), high: at(0.75), n: gaps.length };
}

/** A path of the paired comparison: its call, and its gateway's two processes (CPU read per block). */
interface PairedPath {
  op: (i: number) => Promise<unknown>;
  pids: Array<number | undefined>;
}

/**
 * The endpoint against the relay at 32 callers, round by round (see {@link PAIRED_ROUNDS}): each
 * round's throughput ratio pairs two blocks next to each other in time; the gateways' CPU per call
 * is summed over all their blocks, and also given round by round.
 */
async function pairedConcurrent(
  relay: PairedPath,
  endpoint: PairedPath,
): Promise<{
  ratio: Spread;
  cpuRatio: Spread;
  cpu: { relay: number; endpoint: number };
  main: { relay: number; endpoint: number };
}> {
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  const cpu = { relay: 0, endpoint: 0 };
  // The same CPU, the processes' main threads only (the rest is V8's helper threads: GC, compiler).
  const main = { relay: 0, endpoint: 0 };
  for (let round = 0; round < PAIRED_ROUNDS; round++) {
    const order = round % 2 === 0 ? (['relay', 'endpoint'] as const) : (['endpoint', 'relay'] as const);
    const rate = { relay: 0, endpoint: 0 };
    const perCall = { relay: 0, endpoint: 0 };
    for (const side of order) {
      const path = side === 'relay' ? relay : endpoint;
      const before = path.pids.map((p) => cpuOf(p));
      const mainBefore = path.pids.map((p) => mainThreadCpuMs(p));
      const r = await run(PAIRED_BLOCK, CALLERS, path.op);
      const used = path.pids.reduce<number>((sum, p, i) => sum + cpuOf(p) - (before[i] ?? 0), 0);
      main[side] += path.pids.reduce<number>((sum, p, i) => sum + mainThreadCpuMs(p) - (mainBefore[i] ?? 0), 0);
      rate[side] = PAIRED_BLOCK / r.seconds;
      perCall[side] = used / PAIRED_BLOCK;
      cpu[side] += used;
    }
    ratios.push(rate.endpoint / rate.relay);
    cpuRatios.push(perCall.endpoint / perCall.relay);
  }
  const calls = PAIRED_ROUNDS * PAIRED_BLOCK;
  return {
    ratio: spread(ratios),
    cpuRatio: spread(cpuRatios),
    cpu: { relay: cpu.relay / calls, endpoint: cpu.endpoint / calls },
    main: { relay: main.relay / calls, endpoint: main.endpoint / calls },
  };
}

interface Spread {
  median: number;
  low: number;
  high: number;
}

/** The median and the middle half of `xs`. */
function spread(xs: readonly number[]): Spread {
  const v = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => v[Math.min(v.length - 1, Math.floor(q * v.length))]!;
  return { median: at(0.5), low: at(0.25), high: at(0.75) };
}

/**
 * What the CPU allows at 32 callers when every process shares the box's cores: the direct path's
 * CPU per call over the endpoint path's. A ratio above it cannot be measured on this box however
 * fast each hop is, since the client and the upstream are in both paths and the endpoint and the
 * proxy only in one (and the nats-server, not counted, lowers it further).
 */
function cpuCeiling(direct: Row, via: Row): number {
  return via.cpuTotal > 0 ? direct.cpuTotal / via.cpuTotal : 0;
}

const TRACES_EXPORTED = process.env.BENCH_TRACES === 'exported';

/** An OTLP/HTTP collector that takes every export and keeps nothing (`BENCH_TRACES=exported`). */
async function startTraceSink(): Promise<{ url: string; server: Server; exports: { count: number } }> {
  const exports = { count: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exports.count++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, exports };
}

async function main(): Promise<void> {
  process.stdout.write(`${await benchServiceForm()}\n`);
  const sink = TRACES_EXPORTED ? await startTraceSink() : undefined;
  process.stdout.write(
    sink === undefined
      ? 'spans: no exporter (context only, nothing recorded; BENCH_TRACES=exported: every span exported)\n'
      : `spans: exported over OTLP to a loopback sink (${sink.url})\n`,
  );
  const warnings: string[] = [];
  process.on('warning', (w) => warnings.push(`${w.name}: ${w.message}`));
  const [modernUp, legacyUp] = await Promise.all([startUpstream('modern'), startUpstream('legacy')]);
  const system = await ProxySystem.start({
    proxies: 0,
    env: { ...BENCH_PROXY_ENV, ...(sink === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }) },
  });
  let proxy: ProxyProcess | undefined;
  let endpoint: ServiceProcess | undefined;
  let baseline: ServiceProcess | undefined;
  let relay: BareRelay | undefined;
  const clients: Array<{ close(): Promise<void> }> = [];
  try {
    proxy = await spawnProxyProcess(system, {}, profileArgs('proxy'));
    endpoint = await startEndpointProcess(system);
    if (BASELINE_ROOT !== undefined) baseline = await startEndpointProcess(system, BASELINE_ROOT);
    relay = await startBareRelay(
      { modern: modernUp.url, legacy: legacyUp.url },
      { relay: profileArgs('relay'), responder: profileArgs('responder') },
    );
    await system.setServer('mbench', modernUp.url);
    await system.setServer('lbench', legacyUp.url);
    await system.createAgent('bench', ['mbench', 'lbench'], 2);
    const { token } = await system.api.act<{ token: string }>('CreateAgentToken', { agent: 'bench', name: 'bench' });
    const headers = { authorization: `Bearer ${token}` };
    // The transports hand every request their one shared abort signal, and undici adds a listener
    // to it per request that stays until the transport closes: thousands of calls on one client
    // flood MaxListenersExceededWarning. Nothing is cancelled here, so the signal is left out.
    const fetchNoSignal = (url: string | URL, init?: RequestInit): Promise<Response> => {
      const { signal: _signal, ...rest } = init ?? {};
      return fetch(url, rest);
    };
    const agentUrl = new URL(`${endpoint.url}/v1/agents/bench/mcp`);

    const modernDirect = new ModernClient(
      { name: 'bench-direct-v2', version: '0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await modernDirect.connect(
      new ModernStreamableHTTPClientTransport(new URL(modernUp.url), { fetch: fetchNoSignal }),
    );
    const modernVia = new ModernClient(
      { name: 'bench-endpoint-v2', version: '0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await modernVia.connect(
      new ModernStreamableHTTPClientTransport(agentUrl, { requestInit: { headers }, fetch: fetchNoSignal }),
    );
    if (modernDirect.getProtocolEra() !== 'modern' || modernVia.getProtocolEra() !== 'modern')
      throw new Error('a modern client did not reach the modern era');
    const legacyDirect = new Client({ name: 'bench-direct-v1', version: '0' });
    await legacyDirect.connect(new StreamableHTTPClientTransport(new URL(legacyUp.url), { fetch: fetchNoSignal }));
    const legacyVia = new Client({ name: 'bench-endpoint-v1', version: '0' });
    await legacyVia.connect(
      new StreamableHTTPClientTransport(agentUrl, { requestInit: { headers }, fetch: fetchNoSignal }),
    );
    const modernRelay = new ModernClient(
      { name: 'bench-relay-v2', version: '0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await modernRelay.connect(
      new ModernStreamableHTTPClientTransport(new URL(relay.urlOf('modern')), { fetch: fetchNoSignal }),
    );
    if (modernRelay.getProtocolEra() !== 'modern')
      throw new Error('the modern client did not reach the modern era through the relay');
    const legacyRelay = new Client({ name: 'bench-relay-v1', version: '0' });
    await legacyRelay.connect(
      new StreamableHTTPClientTransport(new URL(relay.urlOf('legacy')), { fetch: fetchNoSignal }),
    );
    clients.push(modernDirect, modernVia, legacyDirect, legacyVia, modernRelay, legacyRelay);
    // The baseline endpoint's clients: the same as the endpoint's, on the other process (else the endpoint's, unused).
    const baseUrl = baseline === undefined ? agentUrl : new URL(`${baseline.url}/v1/agents/bench/mcp`);
    const modernBase = new ModernClient(
      { name: 'bench-baseline-v2', version: '0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await modernBase.connect(
      new ModernStreamableHTTPClientTransport(baseUrl, { requestInit: { headers }, fetch: fetchNoSignal }),
    );
    const legacyBase = new Client({ name: 'bench-baseline-v1', version: '0' });
    await legacyBase.connect(
      new StreamableHTTPClientTransport(baseUrl, { requestInit: { headers }, fetch: fetchNoSignal }),
    );
    clients.push(modernBase, legacyBase);

    const check = (out: { isError?: unknown; content?: unknown }): void => {
      if (out.isError === true) throw new Error(`a call failed: ${JSON.stringify(out.content).slice(0, 300)}`);
    };
    const ops = {
      modernDirect: async (i: number) =>
        check(await modernDirect.callTool({ name: 'echo', arguments: { text: `m${i}` } })),
      modernVia: async (i: number) =>
        check(await modernVia.callTool({ name: 'mbench__echo', arguments: { text: `m${i}` } })),
      legacyDirect: async (i: number) =>
        check((await legacyDirect.callTool({ name: 'echo', arguments: { text: `m${i}` } })) as never),
      legacyVia: async (i: number) =>
        check((await legacyVia.callTool({ name: 'lbench__echo', arguments: { text: `m${i}` } })) as never),
      modernRelay: async (i: number) =>
        check(await modernRelay.callTool({ name: 'echo', arguments: { text: `m${i}` } })),
      legacyRelay: async (i: number) =>
        check((await legacyRelay.callTool({ name: 'echo', arguments: { text: `m${i}` } })) as never),
      modernBase: async (i: number) =>
        check(await modernBase.callTool({ name: 'mbench__echo', arguments: { text: `m${i}` } })),
      legacyBase: async (i: number) =>
        check((await legacyBase.callTool({ name: 'lbench__echo', arguments: { text: `m${i}` } })) as never),
    };
    const rows: Row[] = [];
    const measure = async (
      what: string,
      total: number,
      conc: number,
      op: (i: number) => Promise<unknown>,
      path: 'direct' | 'endpoint' | 'relay' | 'baseline',
      upstreamPid: number | undefined,
    ): Promise<Row> => {
      const via = path !== 'direct';
      // The gateway's two processes: the endpoint and the proxy, or the relay and its responder.
      const pids =
        path === 'relay'
          ? [relay?.relayPid, relay?.responderPid]
          : [(path === 'baseline' ? baseline : endpoint)?.child.pid, proxy?.child.pid];
      await run(WARMUP, conc, op);
      const before = [cpuOf(pids[0]), cpuOf(pids[1]), cpuOf(upstreamPid)];
      const self = process.cpuUsage();
      const r = await run(total, conc, op);
      const selfMs = (process.cpuUsage(self).user + process.cpuUsage(self).system) / 1000;
      const endpointMs = cpuOf(pids[0]) - (before[0] ?? 0);
      const proxyMs = cpuOf(pids[1]) - (before[1] ?? 0);
      const upstreamMs = cpuOf(upstreamPid) - (before[2] ?? 0);
      const per = (ms: number): string => (ms / total).toFixed(3);
      const [first, second] = path === 'relay' ? ['relay', 'responder'] : ['endpoint', 'proxy'];
      const cpu = via
        ? `client ${per(selfMs)}, upstream ${per(upstreamMs)}, ${first} ${per(endpointMs)}, ${second} ${per(proxyMs)}`
        : `client ${per(selfMs)}, upstream ${per(upstreamMs)}`;
      const cpuTotal = (selfMs + upstreamMs + (via ? endpointMs + proxyMs : 0)) / total;
      const row = {
        what,
        calls: total,
        perSecond: total / r.seconds,
        p50: r.p50,
        p99: r.p99,
        cpu,
        cpuTotal,
        cpuGateway: via ? (endpointMs + proxyMs) / total : 0,
      };
      rows.push(row);
      return row;
    };
    const mds = await measure(
      'modern: SDK v2 direct, sequential',
      SEQUENTIAL,
      1,
      ops.modernDirect,
      'direct',
      modernUp.pid,
    );
    const mrs = await measure(
      'modern: SDK v2 through the bare relay, sequential',
      SEQUENTIAL,
      1,
      ops.modernRelay,
      'relay',
      modernUp.pid,
    );
    const mvs = await measure(
      'modern: SDK v2 through the endpoint, sequential',
      SEQUENTIAL,
      1,
      ops.modernVia,
      'endpoint',
      modernUp.pid,
    );
    const mbs =
      baseline &&
      (await measure(
        'modern: SDK v2 through the baseline endpoint, sequential',
        SEQUENTIAL,
        1,
        ops.modernBase,
        'baseline',
        modernUp.pid,
      ));
    const mdc = await measure(
      `modern: SDK v2 direct, ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      ops.modernDirect,
      'direct',
      modernUp.pid,
    );
    const mrc = await measure(
      `modern: SDK v2 through the bare relay, ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      ops.modernRelay,
      'relay',
      modernUp.pid,
    );
    const mvc = await measure(
      `modern: SDK v2 through the endpoint, ${CALLERS} callers`,
      CONCURRENT,
      CALLERS,
      ops.modernVia,
      'endpoint',
      modernUp.pid,
    );
    const mbc =
      baseline &&
      (await measure(
        `modern: SDK v2 through the baseline endpoint, ${CALLERS} callers`,
        CONCURRENT,
        CALLERS,
        ops.modernBase,
        'baseline',
        modernUp.pid,
      ));
    const mix =
      INTERLEAVED > 0
        ? await interleaved(INTERLEAVED, {
            direct: ops.modernDirect,
            relay: ops.modernRelay,
            endpoint: ops.modernVia,
          })
        : undefined;
    const paired =
      PAIRED_ROUNDS > 0
        ? await pairedConcurrent(
            { op: ops.modernRelay, pids: [relay.relayPid, relay.responderPid] },
            { op: ops.modernVia, pids: [endpoint.child.pid, proxy.child.pid] },
          )
        : undefined;
    // The baseline endpoint against this one in paired blocks, the order alternating (the phases
    // above run one after the other, and whichever runs later in a run reads the box's drift).
    const pairedBase =
      baseline !== undefined && PAIRED_ROUNDS > 0
        ? await pairedConcurrent(
            { op: ops.modernBase, pids: [baseline.child.pid] },
            { op: ops.modernVia, pids: [endpoint.child.pid] },
          )
        : undefined;
    const legacy = QUICK
      ? undefined
      : {
          lds: await measure(
            'legacy: SDK v1 direct, sequential',
            SEQUENTIAL,
            1,
            ops.legacyDirect,
            'direct',
            legacyUp.pid,
          ),
          lrs: await measure(
            'legacy: SDK v1 through the bare relay, sequential',
            SEQUENTIAL,
            1,
            ops.legacyRelay,
            'relay',
            legacyUp.pid,
          ),
          lvs: await measure(
            'legacy: SDK v1 through the endpoint, sequential',
            SEQUENTIAL,
            1,
            ops.legacyVia,
            'endpoint',
            legacyUp.pid,
          ),
          lbs:
            baseline &&
            (await measure(
              'legacy: SDK v1 through the baseline endpoint, sequential',
              SEQUENTIAL,
              1,
              ops.legacyBase,
              'baseline',
              legacyUp.pid,
            )),
          ldc: await measure(
            `legacy: SDK v1 direct, ${CALLERS} callers`,
            CONCURRENT,
            CALLERS,
            ops.legacyDirect,
            'direct',
            legacyUp.pid,
          ),
          lrc: await measure(
            `legacy: SDK v1 through the bare relay, ${CALLERS} callers`,
            CONCURRENT,
            CALLERS,
            ops.legacyRelay,
            'relay',
            legacyUp.pid,
          ),
          lvc: await measure(
            `legacy: SDK v1 through the endpoint, ${CALLERS} callers`,
            CONCURRENT,
            CALLERS,
            ops.legacyVia,
            'endpoint',
            legacyUp.pid,
          ),
          lbc:
            baseline &&
            (await measure(
              `legacy: SDK v1 through the baseline endpoint, ${CALLERS} callers`,
              CONCURRENT,
              CALLERS,
              ops.legacyBase,
              'baseline',
              legacyUp.pid,
            )),
        };

    // The legacy path paired too (full runs): its phases above run one after the other, and two
    // such runs read its ratio to the relay 0.73× and 0.99× apart.
    const pairedLegacy =
      legacy !== undefined && PAIRED_ROUNDS > 0
        ? await pairedConcurrent(
            { op: ops.legacyRelay, pids: [relay.relayPid, relay.responderPid] },
            { op: ops.legacyVia, pids: [endpoint.child.pid, proxy.child.pid] },
          )
        : undefined;

    const f = (n: number, d = 2): string => n.toFixed(d);
    const pairedLine = (era: string, p: Awaited<ReturnType<typeof pairedConcurrent>>): string =>
      `- ${era}, ${CALLERS} callers paired (${PAIRED_ROUNDS} rounds, a block of ${PAIRED_BLOCK} calls through each in turn, the order alternating): throughput against the relay median ${f(p.ratio.median)}× (middle half ${f(p.ratio.low)} to ${f(p.ratio.high)}; goal ≥ 0.8: ${p.ratio.median >= 0.8 ? 'met' : 'NOT met'}); endpoint + proxy CPU ${f(p.cpu.endpoint, 3)} ms/call = ${f(p.cpu.endpoint / p.cpu.relay)}× relay + responder's ${f(p.cpu.relay, 3)} over all blocks (goal ≤ 1.5: ${p.cpu.endpoint / p.cpu.relay <= 1.5 ? 'met' : 'NOT met'}; round by round median ${f(p.cpuRatio.median)}×, middle half ${f(p.cpuRatio.low)} to ${f(p.cpuRatio.high)}); of it, the main threads ${f(p.main.endpoint, 3)} against ${f(p.main.relay, 3)} ms/call (${f(p.main.endpoint / p.main.relay)}×), the helper threads (GC, compiler) ${f(p.cpu.endpoint - p.main.endpoint, 3)} against ${f(p.cpu.relay - p.main.relay, 3)}`;
    const lines = [
      `machine: ${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}; ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK: modern rows only)' : ''}`,
      '',
      '| phase | calls | calls/s | p50 ms | p99 ms | CPU ms/call |',
      '|---|---|---|---|---|---|',
      ...rows.map(
        (r) => `| ${r.what} | ${r.calls} | ${f(r.perSecond, 0)} | ${f(r.p50, 3)} | ${f(r.p99, 3)} | ${r.cpu} |`,
      ),
      '',
      'the floor (the bare relay, same client and upstream): goals at 32 callers ≥ 0.8× its throughput; endpoint + proxy CPU per call ≤ 1.5× relay + responder; sequential p50 ≤ its + 0.5 ms',
      ...floorLines('modern', mvs, mvc, mrs, mrc),
      ...(mix
        ? [
            `- modern, sequential interleaved (${INTERLEAVED} calls each, blocks of ${BLOCK} in turn, the same box for the three): p50 direct ${f(mix.p50.direct!, 3)}, relay ${f(mix.p50.relay!, 3)}, endpoint ${f(mix.p50.endpoint!, 3)} ms; endpoint = relay + ${f(mix.p50.endpoint! - mix.p50.relay!, 3)} ms (goal ≤ +0.5: ${mix.p50.endpoint! - mix.p50.relay! <= 0.5 ? 'met' : 'NOT met'}); relay = direct + ${f(mix.p50.relay! - mix.p50.direct!, 3)} ms`,
            ((g) =>
              `- the same, round by round (each round's endpoint block p50 less its relay block's, ${g.n} rounds): median +${f(g.median, 3)} ms, middle half +${f(g.low, 3)} to +${f(g.high, 3)} ms`)(
              pairedGap(mix, 'endpoint', 'relay'),
            ),
          ]
        : []),
      ...(paired ? [pairedLine('modern', paired)] : []),
      ...(legacy ? floorLines('legacy', legacy.lvs, legacy.lvc, legacy.lrs, legacy.lrc) : []),
      ...(pairedLegacy ? [pairedLine('legacy', pairedLegacy)] : []),
      'against direct: at 32 concurrent ≥ 0.8× direct; sequential p50 ≤ direct + 1 ms',
      `- modern: 32 callers ${f(mvc.perSecond / mdc.perSecond)}× direct (${mvc.perSecond / mdc.perSecond >= 0.8 ? 'met' : 'NOT met'}; the relay ${f(mrc.perSecond / mdc.perSecond)}×); sequential p50 +${f(mvs.p50 - mds.p50, 3)} ms (${mvs.p50 - mds.p50 <= 1 ? 'met' : 'NOT met'}; the relay +${f(mrs.p50 - mds.p50, 3)})`,
      ...(legacy
        ? [
            `- legacy: 32 callers ${f(legacy.lvc.perSecond / legacy.ldc.perSecond)}× direct (${legacy.lvc.perSecond / legacy.ldc.perSecond >= 0.8 ? 'met' : 'NOT met'}; the relay ${f(legacy.lrc.perSecond / legacy.ldc.perSecond)}×); sequential p50 +${f(legacy.lvs.p50 - legacy.lds.p50, 3)} ms (${legacy.lvs.p50 - legacy.lds.p50 <= 1 ? 'met' : 'NOT met'}; the relay +${f(legacy.lrs.p50 - legacy.lds.p50, 3)})`,
          ]
        : []),
      `CPU-bound ceiling at ${CALLERS} callers (direct CPU per call / the path's, nats-server not counted): endpoint modern ${f(cpuCeiling(mdc, mvc))}×, relay modern ${f(cpuCeiling(mdc, mrc))}×${legacy ? `; endpoint legacy ${f(cpuCeiling(legacy.ldc, legacy.lvc))}×, relay legacy ${f(cpuCeiling(legacy.ldc, legacy.lrc))}×` : ''}`,
      ...(mbs && mbc ? baselineLines('modern', mvs, mvc, mbs, mbc) : []),
      ...(pairedBase
        ? [
            `- modern against the baseline endpoint, ${CALLERS} callers paired (${PAIRED_ROUNDS} rounds, the order alternating; the endpoint process only, the proxy is shared): endpoint CPU per call this / baseline round by round median ${f(pairedBase.cpuRatio.median, 3)}× (middle half ${f(pairedBase.cpuRatio.low, 3)} to ${f(pairedBase.cpuRatio.high, 3)}), over all blocks ${f(pairedBase.cpu.endpoint / pairedBase.cpu.relay, 3)}×; throughput median ${f(pairedBase.ratio.median, 3)}×`,
          ]
        : []),
      ...(legacy?.lbs && legacy.lbc ? baselineLines('legacy', legacy.lvs, legacy.lvc, legacy.lbs, legacy.lbc) : []),
      ...(sink === undefined ? [] : [`spans exported: ${sink.exports.count} OTLP requests taken by the sink`]),
      `warnings in this process: ${warnings.length === 0 ? 'none' : `${warnings.length}: ${warnings.slice(0, 2).join('; ')}`}`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const e of [endpoint, baseline]) {
      if (e === undefined || e.child.exitCode !== null) continue;
      const exited = new Promise((r) => e.child.once('exit', r));
      e.child.kill('SIGTERM');
      await exited;
    }
    relay?.stop();
    await proxy?.stop();
    sink?.server.close();
    await system.stop();
    modernUp.stop();
    legacyUp.stop();
  }
}

await main();
