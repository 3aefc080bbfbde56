import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { DeliverPolicy } from '@nats-io/jetstream';
import type { Subscription } from '@nats-io/transport-node';
import { connectBus, type Bus } from '@mcpx/bus';
import { loadConfig } from '@mcpx/config';
import {
  decodePayload,
  type AgentChangedEvent,
  type AgentToolsChangedEvent,
  type ServerDiscoveredEvent,
} from '@mcpx/contracts';
import { createDb, type Db } from '@mcpx/db';
import type { RemoteTool } from '@mcpx/domain';
import { startProjector, type RunningProjector } from '@mcpx/projector';
import { createTestDatabase, serviceUrls, uniqueNamespace, type TestDatabase } from './env.js';
import { freePort } from '../servers/free-port.js';
import { ROOT, eventually } from './system.js';
import { entryArgs } from './bundles.js';

/** A projector running as its own process (`services/projector/src/main.ts`). */
export interface ProjectorProcess {
  child: ChildProcess;
  logs: string[];
  /** SIGKILL: no clean-up of any kind. */
  kill(): Promise<void>;
}

export interface HarnessOptions {
  /** Projector instances in this process (default 1; 0 to start them later). */
  instances?: number;
  ackWaitMs?: number;
  env?: Record<string, string>;
}

/**
 * One or more projectors in this process on a database and NATS namespace of the test's own, a bus
 * to publish the registry's events on, and a capture of every agent-tools-changed published (core
 * NATS: a message JetStream drops as a duplicate is still seen here).
 */
export class ProjectorHarness {
  readonly account = `acct${randomBytes(4).toString('hex')}`;
  readonly published: AgentToolsChangedEvent[] = [];
  readonly projectors: RunningProjector[] = [];
  readonly logs: string[] = [];
  private readonly sub: Subscription;
  private generations = new Map<string, number>();
  private revisions = new Map<string, number>();
  private processes: Array<() => Promise<void>> = [];

  private constructor(
    readonly env: Record<string, string>,
    readonly testDb: TestDatabase,
    readonly db: Db,
    readonly bus: Bus,
    private readonly opts: HarnessOptions,
  ) {
    this.sub = bus.nc.subscribe(bus.subjects.agentToolsChangedAll(), {
      callback: (err, msg) => {
        if (!err) this.published.push(decodePayload<AgentToolsChangedEvent>(msg.data));
      },
    });
  }

  static async start(opts: HarnessOptions = {}): Promise<ProjectorHarness> {
    const testDb = await createTestDatabase();
    const ns = uniqueNamespace();
    const env = {
      DATABASE_URL: testDb.url,
      NATS_URL: serviceUrls().nats,
      NATS_PREFIX: ns.natsPrefix,
      LOG_LEVEL: 'info',
      ...opts.env,
    };
    const bus = await connectBus({ url: env.NATS_URL, name: 'projector-test', prefix: env.NATS_PREFIX });
    const h = new ProjectorHarness(env, testDb, createDb(testDb.url, { max: 4 }), bus, opts);
    await bus.nc.flush();
    for (let i = 0; i < (opts.instances ?? 1); i++) await h.startInstance();
    return h;
  }

  async startInstance(): Promise<RunningProjector> {
    const config = loadConfig('projector', {
      ...this.env,
      HTTP_PORT: '0',
      INSTANCE_ID: `projector-${this.projectors.length + 1}`,
    });
    const p = await startProjector(config, {
      logSink: (line) => this.logs.push(line),
      ...(this.opts.ackWaitMs ? { ackWaitMs: this.opts.ackWaitMs } : {}),
    });
    this.projectors.push(p);
    return p;
  }

  /** Starts a projector process on this harness's database and namespace; resolves once healthy. */
  async spawnProcess(env: Record<string, string> = {}): Promise<ProjectorProcess> {
    const port = await freePort();
    // Its own internal port too: the default is fixed, and processes side by side would share it.
    const internalPort = await freePort();
    const logs: string[] = [];
    const child = spawn(process.execPath, entryArgs('projector'), {
      cwd: ROOT,
      env: {
        ...process.env,
        ...this.env,
        ...env,
        HTTP_PORT: String(port),
        HTTP_HOST: '127.0.0.1',
        INTERNAL_HTTP_PORT: String(internalPort),
        INSTANCE_ID: `projector-proc-${port}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, which a kill ends whole (whatever runs the service).
      detached: true,
    });
    child.stdout?.on('data', (d: Buffer) => logs.push(d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => logs.push(d.toString('utf8')));
    const kill = async (): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
    };
    this.processes.push(kill);
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`projector exited: ${logs.join('')}`);
        return (await fetch(`http://127.0.0.1:${port}/healthz`)
          .then((r) => r.ok)
          .catch(() => false))
          ? true
          : undefined;
      },
      60_000,
      'the projector process to be healthy',
    );
    return { child, logs, kill };
  }

  /**
   * Creates `n` agents (`agent-0`…) granting `servers`, straight in SQL: setup, not what is under
   * test (a grant through an event is tested elsewhere). Their sets pick up whatever is projected.
   */
  async seedAgents(n: number, servers: string[], prefix = 'agent-'): Promise<string[]> {
    await sql`
      INSERT INTO projector.agent_sets (account_id, agent_id, servers, revision)
      SELECT ${this.account}, ${prefix} || g, ${servers}::text[], 1 FROM generate_series(0, ${n - 1}) g`.execute(
      this.db,
    );
    for (let i = 0; i < n; i++) this.revisions.set(`${prefix}${i}`, 1);
    return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  }

  /** Publishes a discovery of `server` with the next generation (or the one given). */
  async discovered(
    server: string,
    tools: RemoteTool[],
    opts: { serverId?: string; generation?: number } = {},
  ): Promise<ServerDiscoveredEvent> {
    const generation = opts.generation ?? (this.generations.get(server) ?? 0) + 1;
    this.generations.set(server, Math.max(generation, this.generations.get(server) ?? 0));
    const event: ServerDiscoveredEvent = {
      account: this.account,
      server,
      serverId: opts.serverId ?? `id-${server}`,
      generation,
      tools,
      status: { state: 'ok' },
      toolsChanged: true,
    };
    await this.publish(this.bus.subjects.serverDiscovered(this.account, server), event);
    return event;
  }

  async deleted(server: string, serverId = `id-${server}`): Promise<void> {
    await this.publish(this.bus.subjects.serverDeleted(this.account, server), {
      account: this.account,
      server,
      serverId,
    });
  }

  /** Publishes an agent's definition with the next revision. */
  async agent(agent: string, mcpServers: string[]): Promise<AgentChangedEvent> {
    const revision = (this.revisions.get(agent) ?? 0) + 1;
    this.revisions.set(agent, revision);
    const event: AgentChangedEvent = { account: this.account, agent, revision, mcpServers };
    await this.publish(this.bus.subjects.agentChanged(this.account, agent), event);
    return event;
  }

  /** Publishes any event (a replay publishes the same one again, as a new message). */
  async publish(subject: string, event: unknown): Promise<void> {
    await this.bus.publishEvent(subject, event);
  }

  /** Waits until the projectors have handled (acked) every event published so far. */
  async idle(timeoutMs = 30_000): Promise<void> {
    const { jsm, subjects } = this.bus;
    await eventually(
      async () => {
        const stream = await jsm.streams.info(subjects.mcpEventsStream);
        const info = await jsm.consumers.info(subjects.mcpEventsStream, 'projector').catch(() => null);
        if (info === null) return undefined;
        const done =
          info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq >= stream.state.last_seq;
        return done ? true : undefined;
      },
      timeoutMs,
      'the projector to handle every event',
    );
    await this.bus.nc.flush();
  }

  /** Every agent-tools-changed JetStream stored, in order. */
  async stored(): Promise<AgentToolsChangedEvent[]> {
    const { js, jsm, subjects } = this.bus;
    const info = await jsm.streams.info(subjects.agentToolsStream);
    const total = info.state.messages;
    if (total === 0) return [];
    const consumer = await js.consumers.get(subjects.agentToolsStream, { deliver_policy: DeliverPolicy.All });
    const out: AgentToolsChangedEvent[] = [];
    while (out.length < total) {
      const batch = await consumer.fetch({ max_messages: Math.min(1000, total - out.length), expires: 2000 });
      let got = 0;
      for await (const m of batch) {
        out.push(decodePayload<AgentToolsChangedEvent>(m.data));
        got++;
      }
      if (got === 0) break;
    }
    await consumer.delete().catch(() => undefined);
    return out;
  }

  /** The agent's set as readers see it (the agent_tools view). */
  async toolsOf(agent: string): Promise<
    | {
        tools: Record<string, string>;
        conflicts: Array<{ name: string; server: string; heldBy: string }>;
        version: number;
      }
    | undefined
  > {
    return this.db
      .selectFrom('projector.agent_tools')
      .select(['tools', 'conflicts', 'version'])
      .where('account_id', '=', this.account)
      .where('agent_id', '=', agent)
      .executeTakeFirst();
  }

  eventsFor(agent: string): AgentToolsChangedEvent[] {
    return this.published.filter((e) => e.agent === agent);
  }

  async stop(): Promise<void> {
    this.sub.unsubscribe();
    for (const p of this.projectors) await p.stop().catch(() => undefined);
    for (const kill of this.processes) await kill();
    const { jsm, subjects } = this.bus;
    await jsm.streams.delete(subjects.mcpEventsStream).catch(() => undefined);
    await jsm.streams.delete(subjects.agentToolsStream).catch(() => undefined);
    await this.bus.close();
    await this.db.destroy();
    await this.testDb.drop().catch(() => undefined);
  }
}

/** `n` remote tools named `t00`…, each with `description`. */
export function remoteTools(n: number, description = (i: number) => `Tool number ${i}.`): RemoteTool[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `t${String(i).padStart(2, '0')}`,
    description: description(i),
    inputSchema: { type: 'object', properties: { x: { type: 'string' } } },
  }));
}
