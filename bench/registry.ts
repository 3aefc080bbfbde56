/**
 * `pnpm bench registry`: the registry's discovery and action throughput, in one process against
 * real Postgres, NATS and Redis and real MCP servers on loopback.
 *
 * - discovery of 200 registered servers (20 test MCP servers, 10 records each, 5 tools apiece):
 *   all 200 RefreshMcpServer at once, the registry bounding remote discoveries per instance
 *   (`REGISTRY_DISCOVERY_CONCURRENCY`), for a few bounds;
 * - actions per second for ListMcpServers (10 and 200 servers) and SetMcpServer with an
 *   unchanged config (which validates, saves and discovers again, as the seed says), sequential
 *   and with 16 concurrent clients.
 */
import { availableParallelism, totalmem } from 'node:os';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../test/servers/index.js';
import { ApiClient } from '../test/support/api-client.js';
import { RegistryHarness } from '../test/support/registry-harness.js';

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

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Runs `total` operations with `concurrency` workers; returns throughput and latencies. */
async function measure(what: string, total: number, concurrency: number, op: (i: number) => Promise<unknown>, note = ''): Promise<Row> {
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

async function main(): Promise<void> {
  const tools = Array.from({ length: TOOLS_PER_SERVER }, (_, i) => ({ ...echoTool(), name: `tool_${i}` }));
  const upstreams: TestMcpServer[] = await Promise.all(Array.from({ length: UPSTREAMS }, () => startTestMcpServer({ tools })));
  const h = await RegistryHarness.start({ projector: false, env: { LOG_LEVEL: 'warn', RATE_ACTIONS_PER_SIGNER: '0', RATE_ACTIONS_PER_ADDRESS: '0' } });
  const rows: Row[] = [];
  try {
    const big = h.api();
    const name = (i: number): string => `s${String(i).padStart(3, '0')}`;
    const urlOf = (i: number): string => upstreams[i % UPSTREAMS]?.url ?? '';
    // Registration: 200 SetMcpServer at once (each discovers) through the default bound.
    rows.push(
      await measure('register 200 servers (SetMcpServer, all at once)', SERVERS, SERVERS, async (i) => {
        const { server } = await big.act('SetMcpServer', { name: name(i), config: { url: urlOf(i) } });
        if (server.status.state !== 'ok' || server.tools.length !== TOOLS_PER_SERVER) throw new Error(`${name(i)}: ${server.status.error}`);
      }, 'bound 16 (default)'),
    );
    // Re-discovery of all 200 at once, one registry instance per bound.
    for (const bound of BOUNDS) {
      const registry = await h.addRegistry({}, { discoveryConcurrency: bound });
      const api = new ApiClient(registry.url, big.key);
      const handshakes = upstreams.reduce((n, u) => n + u.stats.handshakes, 0);
      const row = await measure(`discover 200 servers (RefreshMcpServer, all at once)`, SERVERS, SERVERS, async (i) => {
        const { server } = await api.act('RefreshMcpServer', { name: name(i) });
        if (server.status.state !== 'ok') throw new Error(`${name(i)}: ${server.status.error}`);
      }, `bound ${bound}`);
      const made = upstreams.reduce((n, u) => n + u.stats.handshakes, 0) - handshakes;
      row.note += `, ${made} handshakes`;
      rows.push(row);
      await registry.stop();
    }

    const small = h.api();
    for (let i = 0; i < 10; i++) await small.act('SetMcpServer', { name: name(i), config: { url: urlOf(i) } });
    for (const [label, api, n] of [['10 servers', small, 2000], ['200 servers', big, 200]] as const) {
      rows.push(await measure(`ListMcpServers (${label})`, n, 1, () => api.act('ListMcpServers'), 'sequential'));
      rows.push(await measure(`ListMcpServers (${label})`, n, 16, () => api.act('ListMcpServers'), '16 concurrent'));
    }
    rows.push(await measure('SetMcpServer, unchanged config', 300, 1, () => small.act('SetMcpServer', { name: name(0), config: { url: urlOf(0) } }), 'sequential, one server'));
    rows.push(
      await measure('SetMcpServer, unchanged config', 600, 16, (i) => small.act('SetMcpServer', { name: name(i % 10), config: { url: urlOf(i % 10) } }), '16 concurrent, 10 servers'),
    );
  } finally {
    await h.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  }

  const machine = `${availableParallelism()} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
  process.stdout.write(`\nregistry benchmark — ${machine}\n\n`);
  process.stdout.write('| what | ops | ops/s | p50 ms | p99 ms | note |\n|---|---:|---:|---:|---:|---|\n');
  for (const r of rows) {
    process.stdout.write(`| ${r.what} | ${r.ops} | ${(r.ops / r.seconds).toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.note} |\n`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
