/**
 * The multi-node run, on one box: a three-node NATS cluster on loopback
 * (routes between every pair, streams with replicas 3), two registries, two projectors and three
 * proxies, each service connected to a node of its own; steady call and discovery load from
 * several accounts; then one NATS node and one proxy killed mid-load and restarted (a new proxy
 * in its place). It checks that calls go on, no agent-tools-changed event is lost (each agent's
 * versions in the stream run 1..N without a gap and N is its projected version), every run
 * completes (a run's calls are retried on the errors the runtime retries on), and each account's
 * results are its own; and prints calls/s, p50/p99, errors and the time to recover.
 * Used by test/ops/multi-node.test.ts and bench/multi-node.ts.
 */
import { jetstream, jetstreamManager, RetentionPolicy, StorageType, DeliverPolicy } from '@nats-io/jetstream';
import pg from 'pg';
import { decodeAgentToolsChangedEvent, makeSubjects, WireError } from '@mcpx/contracts';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../../servers/index.js';
import type { ApiClient } from '../../support/api-client.js';
import { PrivateNats, waitJetStreamReady } from './infra.js';
import { LoadLoop, formatSummary, type LoadSummary } from './load.js';
import { Stack, percentile, until } from './stack.js';

export interface MultiNodeOptions {
  accounts?: number;
  /** Load before the faults, with them, and after the restarts (ms each). */
  phaseMs?: number;
  callsPerRun?: number;
  concurrency?: number;
  log?: (line: string) => void;
}

export interface MultiNodeResult {
  summary: LoadSummary;
  runsStarted: number;
  runsCompleted: number;
  isolationViolations: number;
  /** Longest stretch without any successful call, from the kill on (ms). */
  longestGapMs: number;
  /** From the NATS node's restart to its JetStream being current again (ms). */
  natsRejoinMs: number;
  /** Start-up retries of the proxy started on the restarted node while it caught up. */
  newProxyRetries: number;
  /** Per agent: versions seen in the stream vs. projected. */
  eventsChecked: number;
  eventGaps: string[];
  discoveries: number;
  report: string;
}

function whoamiTool(label: string): TestTool {
  return {
    name: 'whoami',
    description: 'Names the account it belongs to.',
    inputSchema: { type: 'object' },
    handler: () => ({ content: [{ type: 'text', text: `account ${label}` }] }),
  };
}

function extraTool(n: number): TestTool {
  return {
    name: `extra_${n}`,
    description: `added by change ${n}`,
    inputSchema: { type: 'object' },
    handler: () => ({ content: [{ type: 'text', text: String(n) }] }),
  };
}

/**
 * Faults of the kill that a runtime retries for this idempotent tool: nothing ran
 * (`transport_error`), or it may have run and running it again is harmless (`call_lost`, `timeout`).
 */
const FAULTS = new Set(['transport_error', 'call_lost', 'timeout']);
/** Retries of a call after faults, and after refusals that say when to come back (a limit met). */
const MAX_FAULT_RETRIES = 8;
const MAX_REFUSAL_RETRIES = 100;

export async function runMultiNode(opts: MultiNodeOptions = {}): Promise<MultiNodeResult> {
  const log = opts.log ?? ((l: string) => process.stdout.write(`${l}\n`));
  const accounts = opts.accounts ?? 3;
  const phaseMs = opts.phaseMs ?? 6_000;
  const callsPerRun = opts.callsPerRun ?? 5;
  const nodes = await PrivateNats.cluster(3);
  const upstreams: TestMcpServer[] = [];
  let stack: Stack | undefined;
  try {
    stack = await Stack.start({ nats: nodes[0]!.url, registries: 0, projectors: 0, proxies: 0 });
    const s = stack;
    // The streams with three replicas, created as an operator does before the services start.
    const subjects = makeSubjects(s.env.NATS_PREFIX);
    const jsm = await jetstreamManager(s.nc);
    for (const spec of [
      { name: subjects.mcpEventsStream, subjects: [subjects.mcpEventsAll], max_age: 7 * 24 * 3600 * 1e9 },
      { name: subjects.agentToolsStream, subjects: [subjects.agentToolsChangedAll()], max_age: 24 * 3600 * 1e9 },
    ]) {
      await jsm.streams.add({
        ...spec,
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        duplicate_window: 2 * 60 * 1e9,
        num_replicas: 3,
      });
    }
    // Each instance on a node of its own (they learn the others from the cluster and fail over).
    const nodeOf = (i: number): string => nodes[i % nodes.length]!.url;
    const spawnOn = (name: 'registry' | 'projector' | 'proxy', i: number) => s.spawn(name, { NATS_URL: nodeOf(i) });
    await Promise.all([spawnOn('registry', 0), spawnOn('registry', 1)]);
    await Promise.all([spawnOn('projector', 1), spawnOn('projector', 2)]);
    await Promise.all([spawnOn('proxy', 0), spawnOn('proxy', 1), spawnOn('proxy', 2)]);
    log(
      `multi-node: NATS ${nodes.map((n) => n.name).join(', ')} (R3 streams), ${s.services.map((x) => x.instance).join(', ')}`,
    );

    // Accounts, each with its own server (naming the account) and agent.
    const tenants: Array<{ label: string; api: ApiClient; agent: string; upstream: TestMcpServer; changes: number }> =
      [];
    for (let a = 0; a < accounts; a++) {
      const label = `acct${a}`;
      const upstream = await startTestMcpServer({ era: a % 2 === 0 ? 'modern' : 'legacy', tools: [whoamiTool(label)] });
      upstreams.push(upstream);
      const api = a === 0 ? s.api : s.account();
      await s.setServer('srv', upstream.url, api);
      const agent = await s.createAgent('agent', ['srv'], 1, api);
      tenants.push({ label, api, agent, upstream, changes: 0 });
    }

    // Every call (not run) that answered: when it ended and how long it took; and every error a retry covered.
    const answered: Array<{ end: number; ms: number }> = [];
    const retried: Record<string, number> = {};
    let runsStarted = 0;
    let runsCompleted = 0;
    let isolationViolations = 0;
    let discoveries = 0;
    // A run: `callsPerRun` calls on one run id, each retried on what the runtime retries on.
    const load = new LoadLoop(
      async (w) => {
        const t = tenants[w % tenants.length]!;
        const run = `${t.label}-w${w}-${runsStarted++}`;
        for (let c = 0; c < callsPerRun; c++) {
          for (let faults = 0, refusals = 0; ;) {
            const t0 = Date.now();
            try {
              const out = await s.call(t.agent, run, 'srv__whoami', {}, { account: t.api.principal, timeoutMs: 5_000 });
              if (out.result.text !== `account ${t.label}`) isolationViolations++;
              answered.push({ end: Date.now(), ms: Date.now() - t0 });
              break;
            } catch (err) {
              const code = err instanceof WireError ? err.code : 'other';
              retried[code] = (retried[code] ?? 0) + 1;
              if (!(err instanceof WireError)) throw err;
              // A refusal that ran nothing and says when to come back (the proxy's per-server call
              // rate, which a fast box's load meets): retried after its hint, as a runtime does.
              if (err.retryable && err.retryAfterMs !== undefined && !FAULTS.has(err.code)) {
                if (++refusals > MAX_REFUSAL_RETRIES) throw err;
                await new Promise((r) => setTimeout(r, err.retryAfterMs));
                continue;
              }
              if (!FAULTS.has(err.code) || ++faults > MAX_FAULT_RETRIES) throw err;
              await new Promise((r) => setTimeout(r, 250));
            }
          }
        }
        runsCompleted++;
      },
      { concurrency: opts.concurrency ?? 6, maxMs: phaseMs * 6 },
    );
    // Discovery load: each account's server changes its tools and is refreshed, over and over.
    let discoveryStop = false;
    const discoveryLoop = (async () => {
      while (!discoveryStop) {
        for (const t of tenants) {
          t.changes++;
          t.upstream.setTools([whoamiTool(t.label), extraTool(t.changes)]);
          await t.api.act('RefreshMcpServer', { name: 'srv' }).then(
            () => discoveries++,
            () => undefined,
          );
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    })();

    await new Promise((r) => setTimeout(r, phaseMs));
    const victimNode = nodes[1]!;
    const victimProxy = s.of('proxy')[1]!;
    const killedAt = Date.now();
    await Promise.all([victimNode.kill(), s.kill(victimProxy)]);
    log(`multi-node: killed NATS ${victimNode.name} and ${victimProxy.instance}`);
    await new Promise((r) => setTimeout(r, phaseMs / 2));
    const restartedAt = Date.now();
    await victimNode.start();
    // The new proxy on the restarted node at once, while that node is still catching up: it
    // waits for JetStream (retrying, not ready meanwhile) instead of exiting — docs/operations.md.
    const [natsRejoinMs, newProxy] = await Promise.all([
      waitJetStreamReady(nodes).then(() => Date.now() - restartedAt),
      spawnOn('proxy', 1),
    ]);
    // How many times it found the node not ready yet (0 when the node was ready by its first try).
    const newProxyRetries = newProxy.logs.join('').split('NATS not ready at start-up, retrying').length - 1;
    log(`multi-node: restarted ${victimNode.name} and a new proxy on it`);
    await new Promise((r) => setTimeout(r, phaseMs));
    discoveryStop = true;
    await discoveryLoop;
    const runs = await load.stop();
    const lat = answered.map((a) => a.ms);
    const summary: LoadSummary = {
      calls: answered.length + Object.values(retried).reduce((a, b) => a + b, 0),
      ok: answered.length,
      errors: Object.values(retried).reduce((a, b) => a + b, 0),
      errorsByCode: retried,
      callsPerSecond: Math.round((answered.length / Math.max(1, runs.seconds)) * 10) / 10,
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      seconds: runs.seconds,
    };

    // The longest stretch without an answered call from the kill on.
    const successes = answered
      .map((a) => a.end)
      .filter((end) => end >= killedAt)
      .sort((a, b) => a - b);
    let longestGapMs = 0;
    let prev = killedAt;
    for (const t of successes) {
      longestGapMs = Math.max(longestGapMs, t - prev);
      prev = t;
    }

    // No agent-tools-changed lost: every agent's versions in the stream run 1..N with no gap,
    // and N is the version the projector holds. Wait for the projection to settle first.
    const db = new pg.Client({ connectionString: s.env.DATABASE_URL });
    await db.connect();
    const eventGaps: string[] = [];
    let eventsChecked = 0;
    try {
      await until(
        async () => {
          for (const t of tenants) {
            const { tools } = await t.api.act<{ tools: Array<{ name: string }> }>('ListAgentTools', { agent: t.agent });
            if (!tools.some((x) => x.name === `srv__extra_${t.changes}`)) return undefined;
          }
          return true;
        },
        30_000,
        'every agent projected with its last change',
      );
      const projected = new Map(
        (
          await db.query<{ agent_id: string; version: number }>('SELECT agent_id, version FROM projector.agent_tools')
        ).rows.map((r) => [r.agent_id, Number(r.version)]),
      );
      const js = jetstream(s.nc);
      const consumer = await js.consumers.get(subjects.agentToolsStream, { deliver_policy: DeliverPolicy.All });
      const info = await jsm.streams.info(subjects.agentToolsStream);
      const versions = new Map<string, number[]>();
      const total = info.state.messages;
      const iter = await consumer.fetch({ max_messages: total, expires: 10_000 });
      for await (const m of iter) {
        const e = decodeAgentToolsChangedEvent(m.data);
        versions.set(e.agent, [...(versions.get(e.agent) ?? []), e.version]);
        eventsChecked++;
        if (eventsChecked >= total) break;
      }
      for (const t of tenants) {
        const seen = [...new Set(versions.get(t.agent) ?? [])].sort((a, b) => a - b);
        const last = projected.get(t.agent) ?? 0;
        const expected = Array.from({ length: last }, (_, i) => i + 1);
        if (JSON.stringify(seen) !== JSON.stringify(expected))
          eventGaps.push(`${t.label}: stream ${JSON.stringify(seen)} vs projected version ${last}`);
      }
    } finally {
      await db.end();
    }

    const report =
      `multi-node: calls ${formatSummary(summary)} (errors retried by the runtime); runs of ${callsPerRun} calls: ${runsCompleted} of ${runsStarted} completed, ${runs.errors} failed${
        runs.errors > 0
          ? ` (${Object.entries(runs.errorsByCode)
              .map(([c, n]) => `${c} ${n}`)
              .join(', ')})`
          : ''
      }; ` +
      `isolation violations ${isolationViolations}; discoveries ${discoveries}; longest gap without a call answered ${longestGapMs} ms after the kill; ` +
      `NATS node back in the cluster ${natsRejoinMs} ms after its restart; the new proxy on it waited ${newProxyRetries} retries; agent-tools-changed ${eventsChecked} events checked, ${eventGaps.length} gaps`;
    log(report);
    return {
      summary,
      runsStarted,
      runsCompleted,
      isolationViolations,
      longestGapMs,
      natsRejoinMs,
      newProxyRetries,
      eventsChecked,
      eventGaps,
      discoveries,
      report,
    };
  } finally {
    await stack?.stop();
    await Promise.all(upstreams.map((u) => u.close()));
    for (const n of nodes) await n.destroy();
  }
}
