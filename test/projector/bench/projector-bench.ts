import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { freemem, loadavg, totalmem } from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import { connectBus, type Bus } from '@mcpx/bus';
import { loadConfig } from '@mcpx/config';
import type { ServerDiscoveredEvent } from '@mcpx/contracts';
import { createDb, migrate, type Db } from '@mcpx/db';
import { startProjector, type RunningProjector } from '@mcpx/projector';
import { serviceUrls, uniqueNamespace } from '../../support/env.js';
import { remoteTools } from '../../support/projector-harness.js';
import { publishToAckMs } from './replay-ack.js';

/**
 * `pnpm bench projector [sizes…]`: one server of 50 tools granted to 10,000 and 100,000 agents.
 * (a) the first projection, (b) one tool's description changes — until every agent's set is updated
 * and JetStream acknowledged every agent-tools-changed, (c) the same event replayed — from its
 * publish to the projector's ack of it on the wire (replay-ack.ts), and how many events it
 * published (goal: 0).
 */
const ROOT = join(import.meta.dirname, '..', '..', '..');
const TOOLS = 50;
const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const SIZES = sizes.length > 0 ? sizes : [10_000, 100_000];

interface Row {
  agents: number;
  first: number;
  change: number;
  replay: number;
  replayEvents: number;
}

async function ownDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mcpx_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serviceUrls().postgres });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serviceUrls().postgres);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: serviceUrls().postgres });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

async function until(
  check: () => Promise<boolean>,
  what: string,
  progress?: () => Promise<string>,
  timeoutMs = 600_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let report = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    if (Date.now() > report && progress !== undefined) {
      process.stderr.write(`still waiting for ${what}: ${await progress()}\n`);
      report = Date.now() + 15_000;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function storedEvents(bus: Bus): Promise<number> {
  return (await bus.jsm.streams.info(bus.subjects.agentToolsStream)).state.messages;
}

/** True once the projector acked every event published on MCP_EVENTS. */
async function projectorIdle(bus: Bus): Promise<boolean> {
  const stream = await bus.jsm.streams.info(bus.subjects.mcpEventsStream);
  const info = await bus.jsm.consumers.info(bus.subjects.mcpEventsStream, 'projector');
  return info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq >= stream.state.last_seq;
}

async function runSize(n: number, bus: Bus, db: Db): Promise<Row> {
  const account = `bench${randomBytes(4).toString('hex')}`;
  const server = 'srv';
  // Setup, not measured: the agents, straight in SQL.
  await sql`INSERT INTO projector.agent_sets (account_id, agent_id, servers, revision)
    SELECT ${account}, 'agent-' || g, ARRAY[${server}]::text[], 1 FROM generate_series(1, ${n}) g`.execute(db);
  await sql`VACUUM ANALYZE projector.agent_sets`.execute(db);
  const event = (generation: number): ServerDiscoveredEvent => ({
    account,
    server,
    serverId: `id-${server}`,
    generation,
    tools: remoteTools(TOOLS, (i) =>
      generation > 1 && i === 7 ? `Changed in generation ${generation}.` : `Tool number ${i}.`,
    ),
    status: { state: 'ok' },
    toolsChanged: true,
  });
  const subject = bus.subjects.serverDiscovered(account, server);

  const base = await storedEvents(bus);
  let t0 = performance.now();
  await bus.publishEvent(subject, event(1));
  const progress = async (): Promise<string> => {
    const c = await bus.jsm.consumers.info(bus.subjects.mcpEventsStream, 'projector');
    return `${(await storedEvents(bus)) - base} events stored; consumer pending ${c.num_pending}, ack pending ${c.num_ack_pending}, redelivered ${c.num_redelivered}`;
  };
  await until(async () => (await storedEvents(bus)) >= base + n, 'the first projection', progress);
  const first = performance.now() - t0;
  await until(() => projectorIdle(bus), 'the projector to be idle', progress);

  t0 = performance.now();
  const changed = event(2);
  await bus.publishEvent(subject, changed);
  await until(async () => (await storedEvents(bus)) >= base + 2 * n, 'the change', progress);
  const change = performance.now() - t0;
  // Every agent's set is updated: the new CID for every one of them (checked after the clock stops).
  const versions = await sql<{
    v: number;
    c: number;
  }>`SELECT min(version) AS v, count(*)::int AS c FROM projector.agent_sets WHERE account_id = ${account}`.execute(db);
  if (versions.rows[0]?.v !== 3 || versions.rows[0]?.c !== n)
    throw new Error(`sets not updated: ${JSON.stringify(versions.rows[0])}`);
  const sample = await db
    .selectFrom('projector.agent_tools')
    .select('tools')
    .where('account_id', '=', account)
    .where('agent_id', '=', `agent-${n}`)
    .executeTakeFirstOrThrow();
  const doc = await db
    .selectFrom('projector.tool_documents')
    .select('cid')
    .where('account_id', '=', account)
    .where('name', '=', 'srv__t07')
    .executeTakeFirstOrThrow();
  if (sample.tools.srv__t07 !== doc.cid || Object.keys(sample.tools).length !== TOOLS)
    throw new Error('sample agent set is stale');
  await until(() => projectorIdle(bus), 'the projector to be idle', progress);

  const before = await storedEvents(bus);
  let published = 0;
  const sub = bus.nc.subscribe(bus.subjects.agentToolsChangedAll(account), { callback: () => void published++ });
  await bus.nc.flush();
  // Five replays; the row gives the median.
  const replays: number[] = [];
  for (let i = 0; i < 5; i++) {
    replays.push(await publishToAckMs(bus, subject, changed));
    await until(() => projectorIdle(bus), 'the projector to be idle', progress);
  }
  const replay = [...replays].sort((a, b) => a - b)[2]!;
  process.stderr.write(`${n} agents: replays ${replays.map((r) => r.toFixed(1)).join(', ')} ms\n`);
  await bus.nc.flush();
  sub.unsubscribe();
  const replayEvents = Math.max(published, (await storedEvents(bus)) - before);
  return { agents: n, first, change, replay, replayEvents };
}

function machine(): string {
  const nproc = execFileSync('nproc', { encoding: 'utf8' }).trim();
  let free: string;
  try {
    free = execFileSync('free', ['-h'], { encoding: 'utf8' }).split('\n')[1]?.replace(/\s+/g, ' ').trim() ?? '';
  } catch {
    free = `${(totalmem() / 2 ** 30).toFixed(1)} GiB total, ${(freemem() / 2 ** 30).toFixed(1)} GiB free`;
  }
  return `${nproc} cores (nproc), \`free -h\` (total used free shared buff/cache available): \`${free}\`, node ${process.version}, load average at the end ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;
}

const ms = (v: number): string => `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ms`;

function table(rows: Row[]): string {
  const lines = [
    '| agents | (a) first projection | (b) one description changes | (c) replay | (c) events published |',
    '|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.agents.toLocaleString('en-US')} | ${ms(r.first)} | ${ms(r.change)} | ${ms(r.replay)} | ${r.replayEvents} |`,
    ),
  ];
  return lines.join('\n');
}

/** Appends a run to the `## Projector` section of BENCHMARKS.md (created when missing). */
function record(rows: Row[]): void {
  const file = join(ROOT, 'BENCHMARKS.md');
  const run = `### ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — ${machine()}\n\n${table(rows)}\n`;
  let text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const heading = '## Projector';
  const at = text.indexOf(`\n${heading}\n`);
  if (at < 0) {
    text = `${text.trimEnd()}\n\n${heading}\n\n${PROJECTOR_INTRO}\n\n${run}`;
  } else {
    const start = at + heading.length + 2;
    const next = text.indexOf('\n## ', start);
    const end = next < 0 ? text.length : next;
    text = `${text.slice(0, end).trimEnd()}\n\n${run}${next < 0 ? '' : `\n${text.slice(end + 1)}`}`;
  }
  writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}

const PROJECTOR_INTRO = [
  '`pnpm bench projector [sizes…]` (`bench/projector.ts`): one server of 50 tools granted to N agents',
  '(agents seeded in SQL), the projector in the bench process on real Postgres and NATS JetStream.',
  '(a) first projection: discovery published → N agent-tools-changed stored by JetStream;',
  "(b) one tool's description changes: discovery published → every agent's set updated (checked) and",
  'N events acknowledged by JetStream; (c) the same event replayed: published → acked by the',
  'projector, and the events it published (goal 0). Goals (2 cores): (b) 10k ≤ 1 s, 100k ≤ 8 s;',
  '(c) 10k ≤ 100 ms.',
].join('\n');

async function main(): Promise<void> {
  const database = await ownDatabase();
  const db = createDb(database.url, { max: 4 });
  await migrate(db, 'projector');
  const ns = uniqueNamespace();
  const env = {
    DATABASE_URL: database.url,
    NATS_URL: serviceUrls().nats,
    NATS_PREFIX: ns.natsPrefix,
    LOG_LEVEL: 'warn',
    HTTP_PORT: '0',
    INSTANCE_ID: 'projector-bench',
  };
  const bus = await connectBus({ url: env.NATS_URL, name: 'projector-bench', prefix: env.NATS_PREFIX });
  let projector: RunningProjector | undefined;
  const rows: Row[] = [];
  try {
    projector = await startProjector(loadConfig('projector', env), {
      logSink: (line) => void process.stderr.write(line.endsWith('\n') ? line : `${line}\n`),
    });
    for (const n of SIZES) {
      const row = await runSize(n, bus, db);
      rows.push(row);
      process.stdout.write(
        `${n} agents: first ${ms(row.first)}, change ${ms(row.change)}, replay ${ms(row.replay)} (${row.replayEvents} events)\n`,
      );
    }
  } finally {
    await projector?.stop();
    await bus.jsm.streams.delete(bus.subjects.mcpEventsStream).catch(() => undefined);
    await bus.jsm.streams.delete(bus.subjects.agentToolsStream).catch(() => undefined);
    await bus.close();
    await db.destroy();
    await database.drop();
  }
  process.stdout.write(`\n${table(rows)}\n`);
  if (process.env.BENCH_NO_RECORD === undefined) record(rows);
}

await main();
