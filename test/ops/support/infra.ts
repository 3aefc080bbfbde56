/**
 * Private infrastructure for the fault, multi-node, load and soak runs: a nats-server (alone or
 * one node of a cluster), a redis-server and a Postgres cluster (initdb + pg_ctl) of the run's
 * own, on free loopback ports, that a test may stop, kill and restart — never the machine's own.
 * Each is a real program from the machine's packages (Debian's nats-server, redis-server and
 * PostgreSQL); `available()` says which are installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tcpConnect } from 'node:net';
import pg from 'pg';
import { freePort } from '../../servers/free-port.js';

/** `n` distinct free ports (from the test worker's own block: see ../../servers/free-port.ts). */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  return ports;
}

export function which(bin: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' });
  const path = r.stdout.trim();
  return r.status === 0 && path !== '' ? path : undefined;
}

/** The Postgres binaries directory (Debian's /usr/lib/postgresql/<v>/bin), or where pg_ctl is on the PATH. */
function pgBin(): string | undefined {
  for (const v of ['17', '16', '15', '14', '13'])
    if (existsSync(`/usr/lib/postgresql/${v}/bin/pg_ctl`)) return `/usr/lib/postgresql/${v}/bin`;
  const onPath = which('pg_ctl');
  return onPath === undefined ? undefined : onPath.replace(/\/pg_ctl$/, '');
}

export function available(): { nats: boolean; redis: boolean; postgres: boolean } {
  return {
    nats: which('nats-server') !== undefined,
    redis: which('redis-server') !== undefined,
    postgres: pgBin() !== undefined,
  };
}

export function portAnswers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host, port, timeout: 1000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

async function waitPort(
  port: number,
  child: ChildProcess | undefined,
  logs: string[],
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child !== undefined && child.exitCode !== null)
      throw new Error(`${what} exited (${child.exitCode}):\n${logs.join('')}`);
    if (await portAnswers(port)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not listen on ${port} in time:\n${logs.join('')}`);
}

/** A long-running program the test controls: kill it (SIGKILL), stop it (SIGTERM), start it again on the same port and data. */
abstract class Managed {
  protected child: ChildProcess | undefined;
  readonly logs: string[] = [];
  abstract readonly name: string;
  abstract readonly port: number;
  protected abstract command(): {
    bin: string;
    args: string[];
    env?: Record<string, string>;
    ids?: { uid: number; gid: number };
  };

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    if (this.running) return;
    const { bin, args, env, ids } = this.command();
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, ...ids });
    child.stdout?.on('data', (d: Buffer) => this.logs.push(d.toString('utf8')));
    child.stderr?.on('data', (d: Buffer) => this.logs.push(d.toString('utf8')));
    this.child = child;
    await waitPort(this.port, child, this.logs, this.name);
  }

  protected async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child === undefined || !this.running) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }

  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  async restart(downMs = 0): Promise<void> {
    await this.kill();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.start();
  }
}

export interface NatsNodeOptions {
  /** The cluster's name and every node's route URL (this node's own included is fine). */
  cluster?: { name: string; port: number; routes: string[] };
  serverName?: string;
}

export class PrivateNats extends Managed {
  readonly name: string;
  readonly storeDir: string;

  private constructor(
    readonly port: number,
    readonly monitorPort: number,
    private readonly opts: NatsNodeOptions,
  ) {
    super();
    this.name = opts.serverName ?? `nats-${port}`;
    this.storeDir = mkdtempSync(join(tmpdir(), 'mcpx-nats-'));
  }

  static async create(opts: NatsNodeOptions & { port?: number } = {}): Promise<PrivateNats> {
    const [port, monitor] = await freePorts(2);
    const n = new PrivateNats(opts.port ?? (port as number), monitor as number, opts);
    await n.start();
    return n;
  }

  /**
   * A three-node (or `size`) cluster on loopback: routes between every pair, JetStream on each.
   * `start`: how many nodes to start now (default all; the rest `start()` later, and JetStream
   * has no meta leader until a majority runs).
   */
  static async cluster(size = 3, opts: { start?: number } = {}): Promise<PrivateNats[]> {
    const all = await freePorts(3 * size);
    const ports = all.slice(0, size);
    const clusterPorts = all.slice(size, 2 * size);
    const monitorPorts = all.slice(2 * size);
    const routes = clusterPorts.map((p) => `nats://127.0.0.1:${p}`);
    const nodes: PrivateNats[] = [];
    for (let i = 0; i < size; i++) {
      nodes.push(
        new PrivateNats(ports[i] as number, monitorPorts[i] as number, {
          serverName: `n${i + 1}`,
          cluster: { name: 'mcpx', port: clusterPorts[i] as number, routes },
        }),
      );
    }
    const now = opts.start ?? size;
    await Promise.all(nodes.slice(0, now).map((n) => n.start()));
    // JetStream has a meta leader only once the routes are up.
    if (now === size) await waitJetStreamReady(nodes);
    return nodes;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  protected command(): { bin: string; args: string[] } {
    const args = [
      '-a',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-m',
      String(this.monitorPort),
      '-js',
      '-sd',
      this.storeDir,
      '-n',
      this.name,
    ];
    if (this.opts.cluster !== undefined) {
      args.push(
        '--cluster_name',
        this.opts.cluster.name,
        '--cluster',
        `nats://127.0.0.1:${this.opts.cluster.port}`,
        '--routes',
        this.opts.cluster.routes.join(','),
      );
    }
    return { bin: 'nats-server', args };
  }

  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/** Waits until every node's monitoring says JetStream is up with a meta leader. */
export async function waitJetStreamReady(nodes: PrivateNats[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const n of nodes) {
    for (;;) {
      const r = await fetch(`http://127.0.0.1:${n.monitorPort}/healthz?js-enabled-only=true`).catch(() => undefined);
      const js = await fetch(`http://127.0.0.1:${n.monitorPort}/jsz`)
        .then((x) => x.json() as Promise<{ meta_cluster?: { leader?: string } }>)
        .catch(() => undefined);
      if (r?.ok === true && (nodes.length === 1 || (js?.meta_cluster?.leader ?? '') !== '')) break;
      if (Date.now() > deadline) throw new Error(`NATS node ${n.name} not ready:\n${n.logs.join('')}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  }
}

export class PrivateRedis extends Managed {
  readonly name: string;

  private constructor(
    readonly port: number,
    private readonly extra: string[],
  ) {
    super();
    this.name = `redis-${port}`;
  }

  /** `extra`: more arguments of redis-server (e.g. `--maxmemory 4mb` for a Redis that fills up). */
  static async create(extra: string[] = []): Promise<PrivateRedis> {
    const r = new PrivateRedis(await freePort(), extra);
    await r.start();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  protected command(): { bin: string; args: string[] } {
    return {
      bin: 'redis-server',
      args: ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.extra],
    };
  }
}

/**
 * A Postgres cluster of the run's own (initdb into a temporary directory, trust auth on loopback
 * only). As root, the server runs as the `postgres` user (it refuses root).
 */
export class PrivatePostgres extends Managed {
  readonly name: string;
  readonly dataDir: string;
  private readonly bin: string;
  /** As root: the `postgres` user's ids (the server refuses root). */
  private readonly ids: { uid: number; gid: number } | undefined;

  private constructor(readonly port: number) {
    super();
    this.name = `postgres-${port}`;
    const bin = pgBin();
    if (bin === undefined) throw new Error('no PostgreSQL binaries (initdb, pg_ctl) on this machine');
    this.bin = bin;
    this.dataDir = mkdtempSync(join(tmpdir(), 'mcpx-pg-'));
    if (process.getuid?.() === 0) {
      const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
      const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
      if (!Number.isInteger(uid) || !Number.isInteger(gid))
        throw new Error('running as root and there is no postgres user to run Postgres as');
      this.ids = { uid, gid };
      chownSync(this.dataDir, uid, gid);
    }
    const init = spawnSync(
      `${this.bin}/initdb`,
      ['-D', this.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'],
      { encoding: 'utf8', ...this.ids },
    );
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  }

  static async create(): Promise<PrivatePostgres> {
    const p = new PrivatePostgres(await freePort());
    await p.start();
    return p;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Listening is not ready ("the database system is starting up"): waits for a query to answer. */
  override async start(): Promise<void> {
    await super.start();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const c = new pg.Client({ connectionString: this.url() });
      try {
        await c.connect();
        await c.query('SELECT 1');
        await c.end();
        return;
      } catch (err) {
        await c.end().catch(() => undefined);
        if (Date.now() > deadline)
          throw new Error(`Postgres on ${this.port} not ready: ${(err as Error).message}\n${this.logs.join('')}`, {
            cause: err,
          });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  protected command(): { bin: string; args: string[]; ids?: { uid: number; gid: number } } {
    const args = [
      '-D',
      this.dataDir,
      '-p',
      String(this.port),
      '-h',
      '127.0.0.1',
      '-k',
      this.dataDir,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=300',
    ];
    return { bin: `${this.bin}/postgres`, args, ...(this.ids ? { ids: this.ids } : {}) };
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
