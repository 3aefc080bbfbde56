/**
 * `pnpm bench registry`: the registry's discovery and action throughput, in one process against
 * real Postgres, NATS and Redis and real MCP servers on loopback.
 *
 * - discovery of 200 registered servers (20 test MCP servers, 10 records each, 5 tools apiece):
 *   all 200 RefreshMcpServer at once, the registry bounding remote discoveries per instance
 *   (`REGISTRY_DISCOVERY_CONCURRENCY`), for a few bounds;
 * - actions per second for ListMcpServers (10 and 200 servers) and SetMcpServer with an
 *   unchanged config (which validates, saves and discovers again, as the seed says), sequential
 *   and with 16 concurrent clients;
 * - contract pinning: a discovery (RefreshMcpServer) of a 200-tool server with no change, pinned
 *   (`pin: review`) and unpinned, interleaved one by one so that both see the same box
 *   (`REGISTRY_BENCH=pins` runs only this part);
 * - the call log: ListCalls over 1,000,000 recorded calls of one account (seeded in SQL over 30
 *   days, 4 agents, 20 servers of 5 tools, 5 % failed), a page of 50 per filter (none, agent,
 *   server, server and tool, failed, a time range, the next page by cursor, a page past the end)
 *   and GetCallFigures, each sequential (`REGISTRY_BENCH=activity` runs only this part);
 * - with `BENCH_BASELINE_ROOT=<checkout>`: this checkout's registry and that checkout's side by
 *   side in the same run (`./registry-baseline.ts`; `REGISTRY_BENCH=baseline` runs only this part).
 */
import { availableParallelism, totalmem } from 'node:os';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../test/servers/index.js';
import { CALL_LOG_REGISTRY, createCallLogAgents, seedCalls } from '../test/activity/seed-calls.js';
import { ApiClient } from '../test/support/api-client.js';
import { RegistryHarness } from '../test/support/registry-harness.js';
import { percentile } from './support/measure.js';
import { reportSideBySide, sideBySide } from './registry-baseline.js';

const BASELINE_ROOT = process.env.BENCH_BASELINE_ROOT;

const UPSTREAMS = 20;
const SERVERS = 200;
const TOOLS_PER_SERVER = 5;
const BOUNDS = [4, 16, 64];

interface Row {
  what: string;
  ops: number;
  seconds: number;
  p50: number;
  p99: number;
  note: string;
}

/** Runs `total` operations with `concurrency` workers; returns throughput and latencies. */
async function measure(
  what: string,
  total: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
  note = '',
): Promise<Row> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t0 = performance.now();
        await op(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { what, ops: total, seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), note };
}

/** A 200-tool server discovered with no change, pinned and unpinned, interleaved; then once with a change held. */
async function pinnedDiscovery(rounds = 150): Promise<Row[]> {
  const tools = Array.from({ length: 200 }, (_, i) => ({
    ...echoTool(),
    name: `tool_${i}`,
    description: `Tool number ${i}: echoes its text back.`,
  }));
  const upstream = await startTestMcpServer({ era: 'modern', tools });
  const h = await RegistryHarness.start({
    projector: false,
    env: { LOG_LEVEL: 'warn', RATE_ACTIONS_PER_SIGNER: '0', RATE_ACTIONS_PER_ADDRESS: '0' },
  });
  try {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'unpinned', config: { url: upstream.url } });
    await api.act('SetMcpServer', { name: 'pinned', config: { url: upstream.url, pin: 'review' } });
    const lat: Record<'pinned' | 'unpinned', number[]> = { pinned: [], unpinned: [] };
    const time: Record<'pinned' | 'unpinned', number> = { pinned: 0, unpinned: 0 };
    // Warm both (JIT, connections), then alternate so drift hits both alike.
    for (let i = 0; i < 20; i++)
      for (const name of ['unpinned', 'pinned'] as const) await api.act('RefreshMcpServer', { name });
    for (let i = 0; i < rounds; i++) {
      for (const name of i % 2 === 0 ? (['unpinned', 'pinned'] as const) : (['pinned', 'unpinned'] as const)) {
        const t0 = performance.now();
        const { server } = await api.act('RefreshMcpServer', { name });
        const ms = performance.now() - t0;
        if (server.status.state !== 'ok' || server.tools.length !== 200 || (server.pendingReviews ?? 0) !== 0)
          throw new Error(`${name}: ${server.status.error ?? 'unexpected listing'}`);
        lat[name].push(ms);
        time[name] += ms;
      }
    }
    const row = (name: 'pinned' | 'unpinned', note: string): Row => {
      const sorted = [...lat[name]].sort((a, b) => a - b);
      return {
        what: `discover a 200-tool server, no change (${name})`,
        ops: rounds,
        seconds: time[name] / 1000,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        note,
      };
    };
    const ratio = time.pinned / time.unpinned;
    const rows = [
      row('unpinned', 'sequential, interleaved'),
      row('pinned', `sequential, interleaved; pinned/unpinned time ${ratio.toFixed(2)}`),
    ];
    // One changed tool: the discovery that holds it (evaluates all 200 contracts) and the accept.
    upstream.setTools(tools.map((t, i) => (i === 7 ? { ...t, description: `${t.description} Changed.` } : t)));
    const held = await measure(
      'discover a 200-tool pinned server, one change held',
      1,
      1,
      () => api.act('RefreshMcpServer', { name: 'pinned' }),
      'evaluates every contract once',
    );
    const [change] = (await api.act('ListToolChanges', { server: 'pinned' })).changes as Array<{
      tool: string;
      cid: string;
    }>;
    const accept = await measure(
      'AcceptToolChange (200-tool server)',
      1,
      1,
      () => api.act('AcceptToolChange', { server: 'pinned', tool: change?.tool, cid: change?.cid }),
      'one contract accepted, the list re-evaluated',
    );
    return [...rows, held, accept];
  } finally {
    await h.stop();
    await upstream.close();
  }
}

const ACTIVITY_CALLS = 1_000_000;

/** ListCalls and GetCallFigures over a million-call account, one filtered page at a time. */
async function callLog(rounds = 200): Promise<Row[]> {
  const h = await RegistryHarness.start(CALL_LOG_REGISTRY);
  try {
    const api = h.api();
    const agents = await createCallLogAgents(api);
    const seeding = performance.now();
    await seedCalls(h.sql, api.principal, agents, ACTIVITY_CALLS);
    const seeded = (performance.now() - seeding) / 1000;
    const week = new Date(Date.now() - 7 * 86_400_000).toISOString();
    const sixDays = new Date(Date.now() - 6 * 86_400_000).toISOString();
    const first = await api.act<{ nextCursor?: string }>('ListCalls', { server: 's03' });
    const filters: Array<[string, Record<string, unknown>]> = [
      ['no filter', {}],
      ['agent', { agent: 'agent-2' }],
      ['server', { server: 's03' }],
      ['server and tool', { server: 's03', tool: 's03__tool_3' }],
      ['failed', { outcome: 'failed' }],
      ['agent, failed', { agent: 'agent-1', outcome: 'failed' }],
      ['server, a day a week ago', { server: 's11', since: week, until: sixDays }],
      ['server, next page by cursor', { server: 's03', cursor: first.nextCursor }],
      ['past the end', { cursor: `${Date.now() - 40 * 86_400_000}.1` }],
    ];
    const rows: Row[] = [];
    for (const [label, f] of filters) {
      const page = await api.act<{ calls: unknown[] }>('ListCalls', f);
      rows.push(
        await measure(
          `ListCalls, ${label} (1,000,000 calls)`,
          rounds,
          1,
          () => api.act('ListCalls', f),
          `${page.calls.length} calls a page, sequential`,
        ),
      );
    }
    rows.push(
      await measure(
        'GetCallFigures (1,000,000 calls, 33,000 in 24 h, 20 servers)',
        50,
        1,
        () => api.act('GetCallFigures'),
        'sequential',
      ),
    );
    rows.push({
      what: `seed 1,000,000 calls (one INSERT, six indexes)`,
      ops: ACTIVITY_CALLS,
      seconds: seeded,
      p50: 0,
      p99: 0,
      note: 'setup, for scale',
    });
    return rows;
  } finally {
    await h.stop();
  }
}

async function main(): Promise<void> {
  if (process.env.REGISTRY_BENCH === 'baseline') {
    if (BASELINE_ROOT === undefined) throw new Error('REGISTRY_BENCH=baseline needs BENCH_BASELINE_ROOT');
    reportSideBySide(await sideBySide(BASELINE_ROOT), BASELINE_ROOT);
    return;
  }
  if (process.env.REGISTRY_BENCH === 'activity') {
    report(await callLog());
    return;
  }
  if (process.env.REGISTRY_BENCH === 'pins') {
    report(await pinnedDiscovery());
    return;
  }
  const tools = Array.from({ length: TOOLS_PER_SERVER }, (_, i) => ({ ...echoTool(), name: `tool_${i}` }));
  const upstreams: TestMcpServer[] = await Promise.all(
    Array.from({ length: UPSTREAMS }, () => startTestMcpServer({ tools })),
  );
  const h = await RegistryHarness.start({
    projector: false,
    env: { LOG_LEVEL: 'warn', RATE_ACTIONS_PER_SIGNER: '0', RATE_ACTIONS_PER_ADDRESS: '0' },
  });
  const rows: Row[] = [];
  try {
    const big = h.api();
    const name = (i: number): string => `s${String(i).padStart(3, '0')}`;
    const urlOf = (i: number): string => upstreams[i % UPSTREAMS]?.url ?? '';
    // Registration: 200 SetMcpServer at once (each discovers) through the default bound.
    rows.push(
      await measure(
        'register 200 servers (SetMcpServer, all at once)',
        SERVERS,
        SERVERS,
        async (i) => {
          const { server } = await big.act('SetMcpServer', { name: name(i), config: { url: urlOf(i) } });
          if (server.status.state !== 'ok' || server.tools.length !== TOOLS_PER_SERVER)
            throw new Error(`${name(i)}: ${server.status.error}`);
        },
        'bound 16 (default)',
      ),
    );
    // Re-discovery of all 200 at once, one registry instance per bound.
    for (const bound of BOUNDS) {
      const registry = await h.addRegistry({}, { discoveryConcurrency: bound });
      const api = new ApiClient(registry.url, big.key);
      const handshakes = upstreams.reduce((n, u) => n + u.stats.handshakes, 0);
      const row = await measure(
        `discover 200 servers (RefreshMcpServer, all at once)`,
        SERVERS,
        SERVERS,
        async (i) => {
          const { server } = await api.act('RefreshMcpServer', { name: name(i) });
          if (server.status.state !== 'ok') throw new Error(`${name(i)}: ${server.status.error}`);
        },
        `bound ${bound}`,
      );
      const made = upstreams.reduce((n, u) => n + u.stats.handshakes, 0) - handshakes;
      row.note += `, ${made} handshakes`;
      rows.push(row);
      await registry.stop();
    }

    const small = h.api();
    for (let i = 0; i < 10; i++) await small.act('SetMcpServer', { name: name(i), config: { url: urlOf(i) } });
    for (const [label, api, n] of [
      ['10 servers', small, 2000],
      ['200 servers', big, 200],
    ] as const) {
      rows.push(await measure(`ListMcpServers (${label})`, n, 1, () => api.act('ListMcpServers'), 'sequential'));
      rows.push(await measure(`ListMcpServers (${label})`, n, 16, () => api.act('ListMcpServers'), '16 concurrent'));
    }
    rows.push(
      await measure(
        'SetMcpServer, unchanged config',
        300,
        1,
        () => small.act('SetMcpServer', { name: name(0), config: { url: urlOf(0) } }),
        'sequential, one server',
      ),
    );
    rows.push(
      await measure(
        'SetMcpServer, unchanged config',
        600,
        16,
        (i) => small.act('SetMcpServer', { name: name(i % 10), config: { url: urlOf(i % 10) } }),
        '16 concurrent, 10 servers',
      ),
    );
  } finally {
    await h.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  }
  rows.push(...(await pinnedDiscovery()));
  rows.push(...(await callLog()));
  report(rows);
  if (BASELINE_ROOT !== undefined) reportSideBySide(await sideBySide(BASELINE_ROOT), BASELINE_ROOT);
}

function report(rows: Row[]): void {
  const machine = `${availableParallelism()} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
  process.stdout.write(`\nregistry benchmark — ${machine}\n\n`);
  process.stdout.write('| what | ops | ops/s | p50 ms | p99 ms | note |\n|---|---:|---:|---:|---:|---|\n');
  for (const r of rows) {
    process.stdout.write(
      `| ${r.what} | ${r.ops} | ${(r.ops / r.seconds).toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.note} |\n`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
