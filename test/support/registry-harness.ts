import { connect, type NatsConnection } from '@nats-io/transport-node';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig, type Config } from '@mcpx/config';
import { decodePayload, makeSubjects, type AgentToolsChangedEvent, type Subjects } from '@mcpx/contracts';
import { createDb, type Db } from '@mcpx/db';
import type { LogSink } from '@mcpx/log';
import { startProjector } from '@mcpx/projector';
import { startRegistry, type RegistryOptions, type RunningRegistry } from '@mcpx/registry';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { ApiClient } from './api-client.js';
import { serviceUrls } from './env.js';
import { eventually, systemEnv } from './system.js';
import type { TestDatabase } from './env.js';

export interface HarnessOptions {
  /** Extra environment (OUTBOUND_PROFILE, SECRETS_KEYRING, …) over systemEnv's defaults. */
  env?: Record<string, string>;
  /** Start a projector (default true): ListAgentTools and tool documents need it. */
  projector?: boolean;
  /** Start a proxy (default false): InvokeTool needs it. */
  proxy?: boolean;
  registry?: Omit<RegistryOptions, 'telemetry' | 'logSink'>;
  telemetry?: Telemetry;
  logSink?: LogSink;
}

/**
 * Waits (bounded) until the test database has no backends left: a pool that was just ended may
 * still be closing its sockets, and DROP … WITH (FORCE) would hand those clients an error nobody
 * listens to.
 */
async function settleConnections(database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serviceUrls().postgres });
  await admin.connect();
  try {
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline) {
      const r = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [
        database,
      ]);
      if ((r.rows[0]?.n ?? 0) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await admin.end();
  }
}

let sharedTelemetry: Promise<Telemetry> | undefined;

/** One in-memory telemetry per test process (global providers are registered once). */
export function testTelemetry(): Promise<Telemetry> {
  sharedTelemetry ??= setupTelemetry({ serviceName: 'mcpx-test' });
  return sharedTelemetry;
}

export interface CapturedMessage {
  subject: string;
  data: Uint8Array;
}

/**
 * The registry (and the projector, and optionally the proxy) in this process, against a database,
 * NATS namespace and Redis prefix of the test's own; plus what a registry test needs to look
 * behind the API: direct SQL, a NATS connection, more registry instances, table digests.
 */
export class RegistryHarness {
  private readonly stops: Array<() => Promise<void>> = [];
  private registry!: RunningRegistry;
  readonly subjects: Subjects;

  private constructor(
    readonly env: Record<string, string>,
    readonly db: TestDatabase,
    /** A connection without the http allow-list: the CHECK constraint applies in full. */
    readonly sql: Db,
    readonly nc: NatsConnection,
    private readonly opts: HarnessOptions,
    private readonly telemetry: Telemetry,
  ) {
    this.subjects = makeSubjects(env.NATS_PREFIX ?? '');
  }

  static async start(opts: HarnessOptions = {}): Promise<RegistryHarness> {
    const { env, db } = await systemEnv(opts.env);
    const telemetry = opts.telemetry ?? (await testTelemetry());
    const h = new RegistryHarness(
      env,
      db,
      createDb(db.url, { max: 2 }),
      await connect({ servers: serviceUrls().nats }),
      opts,
      telemetry,
    );
    try {
      h.registry = await h.addRegistry();
      if (opts.projector !== false) {
        const projector = await startProjector(h.config('projector'), h.common());
        h.stops.push(() => projector.stop());
      }
      if (opts.proxy === true) {
        // Imported only when asked for, so a registry test does not depend on the proxy's code.
        const { startProxy } = await import('@mcpx/proxy');
        const proxy = await startProxy(h.config('proxy'), h.common());
        h.stops.push(() => proxy.stop());
      }
    } catch (err) {
      await h.stop();
      throw err;
    }
    return h;
  }

  get apiUrl(): string {
    return this.registry.url;
  }

  /** The first registry's internal port (`/healthz`, `/metrics`), which the API does not serve. */
  get internalUrl(): string {
    return this.registry.internalUrl;
  }

  config(service: 'registry' | 'projector' | 'proxy', extraEnv: Record<string, string> = {}): Config {
    return loadConfig(service, {
      ...this.env,
      ...extraEnv,
      HTTP_PORT: '0',
      INSTANCE_ID: `${service}-${this.stops.length + 1}`,
    });
  }

  /** Every log line of the services, unless the options route them elsewhere. */
  readonly logs: string[] = [];

  private common(): { telemetry: Telemetry; logSink: LogSink } {
    return { telemetry: this.telemetry, logSink: this.opts.logSink ?? ((line) => void this.logs.push(line)) };
  }

  /** Starts one more registry instance on the same database, NATS namespace and Redis prefix. */
  async addRegistry(
    extraEnv: Record<string, string> = {},
    registryOpts = this.opts.registry,
  ): Promise<RunningRegistry> {
    const registry = await startRegistry(this.config('registry', extraEnv), { ...registryOpts, ...this.common() });
    let stopped = false;
    const stop = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      await registry.stop();
    };
    this.stops.unshift(stop);
    return { ...registry, stop };
  }

  /** Stops the API's registry and starts another in its place (e.g. with another key ring). */
  async replaceRegistry(extraEnv: Record<string, string>): Promise<void> {
    await this.registry.stop();
    this.registry = await this.addRegistry(extraEnv);
  }

  /** A new account (a fresh key) on the API. */
  api(url = this.apiUrl): ApiClient {
    return new ApiClient(url);
  }

  /** Records every message on a subject pattern of this test's namespace (`>` for all). */
  async capture(pattern = '>'): Promise<{ messages: CapturedMessage[]; stop(): void }> {
    const messages: CapturedMessage[] = [];
    const sub = this.nc.subscribe(`${this.subjects.prefix}${pattern}`, {
      callback: (_err, msg) => {
        messages.push({ subject: msg.subject, data: msg.data });
      },
    });
    await this.nc.flush();
    return { messages, stop: () => sub.unsubscribe() };
  }

  /**
   * How many of `messages` a proxy applies as an invalidation (one each): server events, agent
   * changes and agent-tools changes. A proxy whose invalidation count has grown by this much since
   * the capture began has applied them all.
   */
  invalidating(messages: ReadonlyArray<{ subject: string }>): number {
    const { subjects } = this;
    return messages.filter(
      (m) =>
        (subjects.parseServerEvent(m.subject) ??
          subjects.parseAgentChanged(m.subject) ??
          subjects.parseAgentToolsChanged(m.subject)) !== null,
    ).length;
  }

  /**
   * A digest of every row of every registry and projector table: equal digests, nothing written.
   * With `account`, a table that names its account is digested for that account's rows only, so
   * the background work of the file's other accounts (a re-probe, a re-list) does not count.
   */
  async tableDigest(account?: string): Promise<Record<string, string>> {
    const tables = await sql<{ t: string; scoped: boolean }>`
      SELECT t.table_schema || '.' || t.table_name AS t,
             EXISTS (SELECT 1 FROM information_schema.columns c
                     WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'account_id') AS scoped
      FROM information_schema.tables t
      WHERE t.table_schema IN ('registry', 'projector') AND t.table_type = 'BASE TABLE' AND t.table_name NOT LIKE 'kysely_%'
      ORDER BY 1`.execute(this.sql);
    const out: Record<string, string> = {};
    for (const { t, scoped } of tables.rows) {
      const [schema, table] = t.split('.') as [string, string];
      const where = account !== undefined && scoped ? sql`WHERE x.account_id::text = ${account}` : sql``;
      const r = await sql<{ n: number; d: string }>`
        SELECT count(*)::int AS n, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS d
        FROM ${sql.table(`${schema}.${table}`)} x ${where}`.execute(this.sql);
      out[t] = `${r.rows[0]?.n}:${r.rows[0]?.d}`;
    }
    return out;
  }

  /**
   * The table digest once the projector has stopped writing: two digests a quarter second apart
   * agree (at most ten seconds). A "nothing written" check starts from this, not from a digest
   * taken while the projection of the test's own set-up is still landing.
   */
  async settledDigest(account?: string): Promise<Record<string, string>> {
    let last = await this.tableDigest(account);
    for (let i = 0; i < 40; i++) {
      await new Promise((r) => setTimeout(r, 250));
      const next = await this.tableDigest(account);
      if (JSON.stringify(next) === JSON.stringify(last)) return next;
      last = next;
    }
    throw new Error('the tables did not settle within ten seconds');
  }

  async stop(): Promise<void> {
    for (const s of this.stops) await s().catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
    await this.sql.destroy().catch(() => undefined);
    await settleConnections(this.db.name);
    await this.db.drop().catch(() => undefined);
  }
}

/**
 * The agent-tools-changed events a capture holds once the first has come and half a second more
 * has passed (a second event would follow the first at once); the capture is stopped.
 */
export async function settledToolsChanged(captured: {
  messages: CapturedMessage[];
  stop(): void;
}): Promise<AgentToolsChangedEvent[]> {
  await eventually(async () => (captured.messages.length > 0 ? true : undefined), 15_000, 'agent-tools-changed');
  await new Promise((r) => setTimeout(r, 500));
  captured.stop();
  return captured.messages.map((m) => decodePayload<AgentToolsChangedEvent>(m.data));
}
