/**
 * `pnpm bench load`, two parts in one run on this machine:
 *
 * 1. Proxied calls/s with 1, 2 and 3 proxy instances (processes), the rest of the stack as
 *    processes too, against one upstream in a process of its own (the test server's `echo`,
 *    modern era): CALLS calls from CALLERS concurrent callers, each call on a run of its own group
 *    of ten (so calls spread over the instances through the queue group). Rows `1 proxies`,
 *    `2 proxies`, `3 proxies`, and the scaling factor against one.
 * 2. The projector at AGENTS agents (default 100,000): one contract change applied and every
 *    agent-tools-changed acked by JetStream, against publishing the same number of bare JetStream
 *    events from one process in the same run (the floor the issue sets), and a replay of the same
 *    event (goal ≤ 50 ms, 0 events published).
 *
 *   npm run bench -- load [--calls 6000] [--callers 48] [--agents 100000] [--skip-proxies] [--skip-projector]
 * Prints a Markdown table for BENCHMARKS.md, with the machine and the date.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager, jetstream, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { sql } from 'kysely';
import { connectBus, type Bus } from '@mcpx/bus';
import type { ServerDiscoveredEvent } from '@mcpx/contracts';
import { createDb, type Db } from '@mcpx/db';
import { serviceUrls } from '../../support/env.js';
import { remoteTools } from '../../support/projector-harness.js';
import { publishToAckMs } from '../../projector/bench/replay-ack.js';
import { percentile, ROOT, Stack } from '../support/stack.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string' },
    callers: { type: 'string' },
    agents: { type: 'string' },
    'skip-proxies': { type: 'boolean' },
    'skip-projector': { type: 'boolean' },
  },
});
const CALLS = Number(values.calls ?? 6_000);
const CALLERS = Number(values.callers ?? 48);
const AGENTS = Number(values.agents ?? 100_000);

const ms = (v: number): string => `${v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString('en-US')} ms`;
const say = (line: string): void => void process.stderr.write(`${line}\n`);

async function startUpstream(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test', 'servers', 'echo-upstream-main.ts'), '--era', 'modern'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`upstream exited ${code}`)));
  });
  return { url, stop: () => void child.kill('SIGTERM') };
}

interface ProxyRow {
  proxies: number;
  callsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  spread: string;
}

async function proxyRows(): Promise<ProxyRow[]> {
  const upstream = await startUpstream();
  // Benchmarks measure the path, not the per-agent limits: those are lifted.
  const stack = await Stack.start({
    proxies: 1,
    env: {
      LOG_LEVEL: 'error',
      PROXY_MAX_RUNS: '100000',
      PROXY_MAX_CONNECTIONS: '100000',
      PROXY_MAX_CONCURRENCY_PER_SERVER: '100000',
      PROXY_RATE_PER_SERVER: '1000000',
    },
  });
  const rows: ProxyRow[] = [];
  try {
    await stack.setServer('echo', upstream.url);
    const agent = await stack.createAgent('bench', ['echo'], 1);
    for (const n of [1, 2, 3]) {
      while (stack.of('proxy').filter((p) => p.alive()).length < n) await stack.spawn('proxy', { LOG_LEVEL: 'error' });
      // Warm every instance (pools, era verdicts, caches): not measured.
      await Promise.all(
        Array.from({ length: 60 }, (_, i) => stack.call(agent, `warm-${n}-${i}`, 'echo__echo', { text: 'w' })),
      );
      const latencies: number[] = [];
      const byInstance = new Map<string, number>();
      let errors = 0;
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          for (let i = next++; i < CALLS; i = next++) {
            const c0 = performance.now();
            try {
              const out = await stack.call(agent, `load-${n}-${Math.floor(i / 10)}`, 'echo__echo', { text: `c${i}` });
              latencies.push(performance.now() - c0);
              byInstance.set(out.instance, (byInstance.get(out.instance) ?? 0) + 1);
            } catch {
              errors++;
            }
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      const row = {
        proxies: n,
        callsPerSecond: latencies.length / seconds,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        errors,
        spread: [...byInstance.values()]
          .map((v) => `${Math.round((v / Math.max(1, latencies.length)) * 100)} %`)
          .join(' / '),
      };
      rows.push(row);
      say(
        `${n} proxies: ${Math.round(row.callsPerSecond)} calls/s, p50 ${ms(row.p50)}, p99 ${ms(row.p99)}, ${errors} errors, spread ${row.spread}`,
      );
    }
  } finally {
    await stack.stop();
    upstream.stop();
  }
  return rows;
}

interface ProjectorRow {
  agents: number;
  change: number;
  bare: number;
  replay: number;
  replayEvents: number;
}

async function storedEvents(bus: Bus): Promise<number> {
  return (await bus.jsm.streams.info(bus.subjects.agentToolsStream)).state.messages;
}

async function projectorIdle(bus: Bus): Promise<boolean> {
  const stream = await bus.jsm.streams.info(bus.subjects.mcpEventsStream);
  const info = await bus.jsm.consumers.info(bus.subjects.mcpEventsStream, 'projector');
  return info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq >= stream.state.last_seq;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 900_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** N bare JetStream publishes from one process, 256 in flight, until every one is acked. */
async function barePublishes(n: number): Promise<number> {
  const { connect } = await import('@nats-io/transport-node');
  const nc = await connect({ servers: serviceUrls().nats });
  const jsm = await jetstreamManager(nc);
  const name = `BARE_${randomBytes(4).toString('hex').toUpperCase()}`;
  const subject = `bare.${name.toLowerCase()}`;
  await jsm.streams.add({
    name,
    subjects: [`${subject}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: 2 * 60 * 1e9,
  });
  const js = jetstream(nc);
  // An event the size of an agent-tools-changed with one changed CID.
  const payload = new Uint8Array(220).fill(7);
  try {
    const t0 = performance.now();
    let i = 0;
    await Promise.all(
      Array.from({ length: 256 }, async () => {
        for (let k = i++; k < n; k = i++) await js.publish(`${subject}.agent-${k}`, payload, { msgID: `m-${k}` });
      }),
    );
    return performance.now() - t0;
  } finally {
    await jsm.streams.delete(name).catch(() => undefined);
    await nc.close();
  }
}

async function projectorRow(): Promise<ProjectorRow> {
  // The projector as a process; this process publishes the discovery events and watches JetStream.
  const stack = await Stack.start({ registries: 0, projectors: 1, proxies: 0, env: { LOG_LEVEL: 'error' } });
  const bus = await connectBus({ url: stack.env.NATS_URL, prefix: stack.env.NATS_PREFIX, name: 'load bench' });
  const db: Db = createDb(stack.env.DATABASE_URL, { max: 2 });
  try {
    const account = `bench${randomBytes(4).toString('hex')}`;
    await sql`INSERT INTO projector.agent_sets (account_id, agent_id, servers, revision)
      SELECT ${account}, 'agent-' || g, ARRAY['srv']::text[], 1 FROM generate_series(1, ${AGENTS}) g`.execute(db);
    await sql`VACUUM ANALYZE projector.agent_sets`.execute(db);
    const event = (generation: number): ServerDiscoveredEvent => ({
      account,
      server: 'srv',
      serverId: 'id-srv',
      generation,
      tools: remoteTools(50, (i) =>
        generation > 1 && i === 7 ? `Changed in generation ${generation}.` : `Tool number ${i}.`,
      ),
      status: { state: 'ok' },
      toolsChanged: true,
    });
    const subject = bus.subjects.serverDiscovered(account, 'srv');
    const base = await storedEvents(bus);
    await bus.publishEvent(subject, event(1));
    await waitFor(async () => (await storedEvents(bus)) >= base + AGENTS, 'the first projection');
    await waitFor(() => projectorIdle(bus), 'the projector idle');
    say(`projector: ${AGENTS.toLocaleString('en-US')} agents projected; measuring the change`);

    const t0 = performance.now();
    await bus.publishEvent(subject, event(2));
    await waitFor(async () => (await storedEvents(bus)) >= base + 2 * AGENTS, 'the change');
    const change = performance.now() - t0;
    await waitFor(() => projectorIdle(bus), 'the projector idle');

    const bare = await barePublishes(AGENTS);

    const before = await storedEvents(bus);
    // Five replays, each from its publish to the projector's ack of that message on the wire (no
    // polling timed); the row gives the median, the line says all five.
    const replays: number[] = [];
    for (let i = 0; i < 5; i++) {
      replays.push(await publishToAckMs(bus, subject, event(2)));
      await waitFor(() => projectorIdle(bus), 'the replay acked');
    }
    const replay = percentile(replays, 50);
    say(`projector: replays ${replays.map((r) => ms(r)).join(', ')}`);
    const replayEvents = (await storedEvents(bus)) - before;
    say(`projector: change ${ms(change)}, bare publishes ${ms(bare)}, replay ${ms(replay)} (${replayEvents} events)`);
    return { agents: AGENTS, change, bare, replay, replayEvents };
  } finally {
    await db.destroy();
    await bus.close();
    await stack.stop();
  }
}

function machine(): string {
  const cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], {
    encoding: 'utf8',
  }).trim();
  const nproc = execFileSync('nproc', { encoding: 'utf8' }).trim();
  return `${nproc} cores (${cpu}), load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at start, Node ${process.version}`;
}

const started = new Date();
const host = machine();
const proxies = values['skip-proxies'] ? [] : await proxyRows();
const projector = values['skip-projector'] ? undefined : await projectorRow();

const lines = [
  `### Load (\`pnpm bench load\`), ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `Machine: ${host}.`,
  '',
];
if (proxies.length > 0) {
  const one = proxies[0]!.callsPerSecond;
  lines.push(
    `Proxied calls, ${CALLS.toLocaleString('en-US')} calls from ${CALLERS} callers (runs of ten calls), every service and the upstream a process of its own on this box:`,
    '',
    '| instances | calls/s | p50 | p99 | errors | calls per instance | scaling vs 1 |',
    '|---|---|---|---|---|---|---|',
    ...proxies.map(
      (r) =>
        `| ${r.proxies} proxies | ${Math.round(r.callsPerSecond).toLocaleString('en-US')} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.errors} | ${r.spread} | ${(r.callsPerSecond / one).toFixed(2)}× |`,
    ),
    '',
  );
}
if (projector !== undefined) {
  lines.push(
    `Projector at ${projector.agents.toLocaleString('en-US')} agents (one server of 50 tools; one description changes):`,
    '',
    '| agents | change applied, every event acked | bare JetStream publishes, same count, one process | ratio | replay | replay events |',
    '|---|---|---|---|---|---|',
    `| ${projector.agents.toLocaleString('en-US')} | ${ms(projector.change)} | ${ms(projector.bare)} | ${(projector.change / projector.bare).toFixed(2)}× | ${ms(projector.replay)} | ${projector.replayEvents} |`,
    '',
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(0);
