/**
 * The three services as processes (any number of each) on infrastructure a test chooses: the
 * machine's Postgres, NATS and Redis, or private ones (infra.ts) it may restart. Plus an account
 * (ApiClient) and the agent runtime's NATS connection and proxy client. Used by the fault suite,
 * the multi-node run, the load bench and the soak.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { makeSubjects, type Subjects, type WireError } from '@mcpx/contracts';
import { createDb, migrate } from '@mcpx/db';
import { generateKeyPair } from '@mcpx/envelope';
import { ProxyClient, type CallInput, type CallOutcome } from '@mcpx/proxy-client';
import { freePorts } from './infra.js';
import { entryArgs } from '../../support/bundles.js';
import { ApiClient } from '../../support/api-client.js';
import { spawnService, stopProcess, wireErrorOf } from '../../support/fixtures/service-process.js';
import { createTestDatabase, serviceUrls } from '../../support/env.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export type ServiceName = 'registry' | 'projector' | 'proxy' | 'endpoint';

export interface StackOptions {
  /** NATS URL(s), comma-separated; default the machine's. */
  nats?: string;
  redis?: string;
  /** A Postgres server URL (its `postgres` database); the stack creates and migrates a database of its own there. Default: a clone of the test run's template on the machine's Postgres. */
  postgres?: string;
  registries?: number;
  projectors?: number;
  proxies?: number;
  /** Agent MCP endpoints (default none). */
  endpoints?: number;
  env?: Record<string, string>;
  /** Let the stack's processes print their logs here too (default: kept in memory). */
  echoLogs?: boolean;
  /**
   * Run the services from their sources through tsx, as `npm start` and the image do, rather than
   * the test run's bundles: for a run that measures the processes themselves (the soak's memory).
   */
  fromSources?: boolean;
}

export interface ServiceProcess {
  name: ServiceName;
  instance: string;
  url: string;
  internalUrl: string;
  child: ChildProcess;
  logs: string[];
  alive(): boolean;
}

/** Waits until the service's `/healthz` answers 200; throws if it exits first or in `timeoutMs`. */
export async function waitHealthy(svc: ServiceProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!svc.alive())
      throw new Error(
        `${svc.instance} exited (${svc.child.exitCode ?? svc.child.signalCode}):\n${svc.logs.join('').slice(-4000)}`,
      );
    if ((await fetch(`${svc.url}/healthz`).catch(() => undefined))?.ok === true) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${svc.instance} not healthy in time:\n${svc.logs.join('').slice(-4000)}`);
}

/** Creates and migrates a database named `mcpx_ops_*` on a Postgres server. */
async function createDatabaseOn(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mcpx_ops_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), { max: 1 });
  try {
    await migrate(db, 'registry');
    await migrate(db, 'projector');
    await migrate(db, 'proxy');
  } finally {
    await db.destroy();
  }
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
      await c.end();
    },
  };
}

/** The services' shared environment: these four always set. */
export type StackEnv = Record<string, string> & {
  DATABASE_URL: string;
  NATS_URL: string;
  REDIS_URL: string;
  NATS_PREFIX: string;
};

export class Stack {
  readonly services: ServiceProcess[] = [];
  readonly subjects: Subjects;
  readonly client: ProxyClient;
  private agentIds = new Map<string, string>();
  private counter = 0;

  private constructor(
    readonly env: StackEnv,
    private readonly dropDb: () => Promise<void>,
    readonly nc: NatsConnection,
    private readonly echoLogs: boolean,
    private readonly fromSources = false,
  ) {
    this.subjects = makeSubjects(env.NATS_PREFIX ?? '');
    this.client = new ProxyClient(nc, this.subjects);
  }

  static async start(opts: StackOptions = {}): Promise<Stack> {
    const urls = serviceUrls();
    const db = opts.postgres !== undefined ? await createDatabaseOn(opts.postgres) : await createTestDatabase();
    const id = randomBytes(4).toString('hex');
    const natsUrl = opts.nats ?? urls.nats;
    const env: StackEnv = {
      DATABASE_URL: db.url,
      NATS_URL: natsUrl,
      REDIS_URL: opts.redis ?? urls.redis,
      NATS_PREFIX: `o${id}.`,
      REDIS_PREFIX: `mcpx-o${id}:`,
      OUTBOUND_PROFILE: 'local',
      SECRETS_KEYRING: 'k1:' + Buffer.alloc(32, 7).toString('base64'),
      LOG_LEVEL: 'warn',
      ...opts.env,
    };
    const nc = await connect({
      servers: natsUrl.split(','),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      name: 'ops runtime',
    });
    const stack = new Stack(env, () => db.drop(), nc, opts.echoLogs ?? false, opts.fromSources ?? false);
    try {
      for (let i = 0; i < (opts.registries ?? 1); i++) await stack.spawn('registry');
      for (let i = 0; i < (opts.projectors ?? 1); i++) await stack.spawn('projector');
      for (let i = 0; i < (opts.proxies ?? 1); i++) await stack.spawn('proxy');
      for (let i = 0; i < (opts.endpoints ?? 0); i++) await stack.spawn('endpoint');
    } catch (err) {
      await stack.stop();
      throw err;
    }
    return stack;
  }

  /** The first live registry's API. */
  get apiUrl(): string {
    const r = this.services.find((s) => s.name === 'registry' && s.alive());
    if (r === undefined) {
      // Say why: the last registry's exit and its log tail (a registry that died after it was healthy).
      const dead = this.services.filter((s) => s.name === 'registry').at(-1);
      const why =
        dead === undefined
          ? ''
          : `: ${dead.instance} exited (${dead.child.exitCode ?? dead.child.signalCode}):\n${dead.logs.join('').slice(-3000)}`;
      throw new Error(`no registry is running${why}`);
    }
    return r.url;
  }

  of(name: ServiceName): ServiceProcess[] {
    return this.services.filter((s) => s.name === name);
  }

  /**
   * Starts one more instance and waits until it is healthy (on other ports if a free port was
   * taken meanwhile). `waitHealthy: false` returns it as soon as it is started.
   */
  async spawn(
    name: ServiceName,
    extraEnv: Record<string, string> = {},
    opts: { waitHealthy?: boolean } = {},
  ): Promise<ServiceProcess> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.spawnOnce(name, extraEnv, opts.waitHealthy ?? true);
      } catch (err) {
        if (attempt >= 3 || !/EADDRINUSE/.test((err as Error).message)) throw err;
        // Another process took a port between our check and the service's listen: other ports.
      }
    }
  }

  private async spawnOnce(name: ServiceName, extraEnv: Record<string, string>, wait: boolean): Promise<ServiceProcess> {
    const [port, internalPort] = (await freePorts(2)) as [number, number];
    const instance = `${name}-${++this.counter}-${port}`;
    const logs: string[] = [];
    const { child } = spawnService(entryArgs(name, { fromSources: this.fromSources }), {
      cwd: ROOT,
      env: { ...process.env, ...this.env, ...extraEnv },
      port,
      internalPort,
      instance,
      onOutput: (chunk) => {
        logs.push(chunk);
        if (logs.length > 2000) logs.splice(0, 1000);
        if (this.echoLogs) process.stderr.write(`[${instance}] ${chunk}`);
      },
    });
    const svc: ServiceProcess = {
      name,
      instance,
      url: `http://127.0.0.1:${port}`,
      internalUrl: `http://127.0.0.1:${internalPort}`,
      child,
      logs,
      alive: () => child.exitCode === null && child.signalCode === null,
    };
    this.services.push(svc);
    if (!wait) return svc;
    try {
      await waitHealthy(svc);
    } catch (err) {
      if (/EADDRINUSE/.test((err as Error).message)) this.services.splice(this.services.indexOf(svc), 1);
      throw err;
    }
    return svc;
  }

  /** SIGKILL: no clean-up, as a crash or an OOM kill. */
  async kill(svc: ServiceProcess): Promise<void> {
    if (!svc.alive()) return;
    const exited = new Promise((r) => svc.child.once('exit', r));
    svc.child.kill('SIGKILL');
    await exited;
  }

  private defaultApi: ApiClient | undefined;
  /** The main account's key: the same whichever registry serves it, and known while none runs. */
  private readonly key = generateKeyPair();

  /** The test's main account, through the first live registry. */
  get api(): ApiClient {
    if (this.defaultApi?.apiUrl !== this.apiUrl) this.defaultApi = new ApiClient(this.apiUrl, this.key);
    return this.defaultApi;
  }

  /** The main account's principal (calls need no registry). */
  get principal(): string {
    return this.key.principal;
  }

  /** Another account (a fresh key). */
  account(): ApiClient {
    return new ApiClient(this.apiUrl);
  }

  /**
   * Saves a server and expects it connected. A discovery whose connection the server closed
   * under it (a keep-alive socket closed as it was reused, on a loaded box) leaves the server
   * unreachable until the re-prober's next try; set-up asks for that try at once, twice at most.
   */
  async setServer(name: string, url: string, api: ApiClient = this.api): Promise<void> {
    type Saved = { server: { status: { state: string; error?: string } } };
    let { server } = await api.actForSetUp<Saved>('SetMcpServer', { name, config: { url } });
    for (
      let retry = 0;
      retry < 2 &&
      server.status.state === 'error' &&
      /other side closed|socket hang up|ECONNRESET/.test(server.status.error ?? '');
      retry++
    ) {
      ({ server } = await api.act<Saved>('RefreshMcpServer', { name }));
    }
    if (server.status.state !== 'ok')
      throw new Error(`server ${name} did not connect: ${server.status.error ?? server.status.state}`);
  }

  /** Creates an agent granted `servers` and waits until it has `minTools` tools projected; returns its id. */
  async createAgent(name: string, servers: string[], minTools = 1, api: ApiClient = this.api): Promise<string> {
    const { agent } = await api.actForSetUp<{ agent: { id: string } }>('CreateAgent', {
      name,
      definition: { mcpServers: servers },
    });
    this.agentIds.set(`${api.principal}/${name}`, agent.id);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const t = await api.act<{ tools: unknown[] }>('ListAgentTools', { agent: agent.id }).catch(() => ({ tools: [] }));
      if (t.tools.length >= minTools) return agent.id;
      if (Date.now() > deadline) throw new Error(`tools not projected onto ${name}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  call(
    agentId: string,
    run: string,
    tool: string,
    args: Record<string, unknown> = {},
    extra: Partial<CallInput> & { account?: string } = {},
  ): Promise<CallOutcome> {
    return this.client.call({
      account: extra.account ?? this.principal,
      agent: agentId,
      run,
      tool,
      arguments: args,
      ...extra,
    });
  }

  async callError(
    agentId: string,
    run: string,
    tool: string,
    args: Record<string, unknown> = {},
    extra: Partial<CallInput> & { account?: string } = {},
  ): Promise<WireError> {
    return await wireErrorOf(this.call(agentId, run, tool, args, extra), tool);
  }

  allLogs(): string {
    return this.services.map((s) => `--- ${s.instance}\n${s.logs.join('')}`).join('\n');
  }

  async stop(): Promise<void> {
    await Promise.all(this.services.map((s) => stopProcess(s.child)));
    await this.nc.close().catch(() => undefined);
    await this.dropDb().catch(() => undefined);
  }
}

/** Polls `fn` until it returns something other than undefined. */
export async function until<T>(
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Percentile of a sample (ms), nearest rank. */
export function percentile(sample: number[], p: number): number {
  if (sample.length === 0) return 0;
  const s = [...sample].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}
