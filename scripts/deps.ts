/**
 * Brings up the infrastructure `npm start` needs — Postgres, NATS (JetStream) and Redis — when
 * it is not already reachable at the configured URLs: with `docker compose` where a Docker engine
 * runs, otherwise with local binaries under the data folder. Whatever it starts, `stop()` stops.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { access, chown, mkdir, open, readdir, readFile, realpath } from 'node:fs/promises';
import { constants } from 'node:fs';
import { connect, isIP } from 'node:net';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface EnsureDependenciesOptions {
  databaseUrl: string;
  natsUrl: string;
  redisUrl: string;
  /** Folder for data and logs of locally started servers, e.g. `<repo>/.data`. */
  dataDir: string;
  log: (line: string) => void;
  /** Defaults to the repository's `docker-compose.yml`. */
  composeFile?: string;
}

export interface RunningDependencies {
  /** What was started, e.g. `nats (local nats-server)`; empty when everything already ran. */
  started: string[];
  /** Stops what was started, newest first. Safe to call more than once. */
  stop(): Promise<void>;
}

type DependencyName = 'postgres' | 'nats' | 'redis';

interface Endpoint {
  name: DependencyName;
  label: string;
  host: string;
  port: number;
  /** The URL with credentials removed, for messages. */
  shownUrl: string;
}

interface Stopper {
  label: string;
  stop(): Promise<void>;
  /** Best effort synchronous stop for `process.on('exit')`. */
  kill(): void;
}

const COMPOSE_PORT_VARS: Record<DependencyName, string> = {
  postgres: 'POSTGRES_PORT',
  nats: 'NATS_PORT',
  redis: 'REDIS_PORT',
};

const INSTALL_HINTS: Record<DependencyName, string> = {
  postgres: 'install PostgreSQL server binaries (initdb, pg_ctl; e.g. apt-get install postgresql) or Docker',
  nats: 'install nats-server (https://nats.io) or Docker',
  redis: 'install redis-server (https://redis.io) or Docker',
};

const BINARY_NAMES: Record<DependencyName, string> = {
  postgres: 'initdb/pg_ctl',
  nats: 'nats-server',
  redis: 'redis-server',
};

export async function ensureDependencies(opts: EnsureDependenciesOptions): Promise<RunningDependencies> {
  const endpoints = [
    parseEndpoint('postgres', 'Postgres', opts.databaseUrl, 5432),
    parseEndpoint('nats', 'NATS', opts.natsUrl.split(',')[0] ?? '', 4222),
    parseEndpoint('redis', 'Redis', opts.redisUrl, 6379),
  ];
  const reachable = await Promise.all(endpoints.map((e) => tcpReachable(e.host, e.port, 1_000)));
  const missing = endpoints.filter((_, i) => !reachable[i]);
  for (const e of endpoints) {
    if (!missing.includes(e)) opts.log(`${e.label}: using ${e.shownUrl}`);
  }

  const stoppers: Stopper[] = [];
  const exitHook = (): void => {
    for (const s of [...stoppers].reverse()) s.kill();
  };
  let stopped: Promise<void> | undefined;
  const result: RunningDependencies = {
    started: [],
    stop: () => {
      stopped ??= (async () => {
        process.off('exit', exitHook);
        for (const s of [...stoppers].reverse()) {
          opts.log(`stopping ${s.label}`);
          await s.stop().catch((err: unknown) => opts.log(`could not stop ${s.label}: ${errorMessage(err)}`));
        }
      })();
      return stopped;
    },
  };
  process.on('exit', exitHook);

  try {
    const remote = missing.filter((e) => !isLocalHost(e.host));
    if (remote.length > 0) {
      throw new Error(
        remote.map((e) => `${e.label} is not reachable at ${e.shownUrl}, which is not a local address, so it is not started here`).join('; '),
      );
    }

    let postgresAdmin: PsqlRunner | undefined;
    if (missing.length > 0 && (await dockerComposeCommand()) !== undefined) {
      const compose = (await dockerComposeCommand())!;
      stoppers.push(await startWithCompose(compose, missing, opts));
      result.started.push(...missing.map((e) => `${e.name} (docker compose)`));
      postgresAdmin = missing.some((e) => e.name === 'postgres') ? composePsql(compose, opts) : undefined;
    } else if (missing.length > 0) {
      const plan = await planLocal(missing);
      const unavailable = plan.filter((p) => p.binary === undefined);
      if (unavailable.length > 0) {
        throw new Error(
          unavailable
            .map(
              ({ endpoint: e }) =>
                `${e.label} is not reachable at ${e.shownUrl} and neither Docker nor ${BINARY_NAMES[e.name]} was found: ${INSTALL_HINTS[e.name]}`,
            )
            .join('\n'),
        );
      }
      await mkdir(opts.dataDir, { recursive: true });
      for (const { endpoint, binary } of plan) {
        const stopper = await startLocal(endpoint, binary!, opts);
        stoppers.push(stopper);
        result.started.push(stopper.label);
        if (typeof binary === 'object') postgresAdmin = localPsql(binary, opts.databaseUrl);
      }
    }

    await ensureDatabase(opts, postgresAdmin ?? (await hostPsql(opts.databaseUrl)), postgresAdmin !== undefined);
    return result;
  } catch (err) {
    await result.stop();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Endpoints and probes

function parseEndpoint(name: DependencyName, label: string, raw: string, defaultPort: number): Endpoint {
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `${name}://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`${label}: cannot parse the URL ${JSON.stringify(redactUrl(text))}`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { name, label, host, port: url.port ? Number(url.port) : defaultPort, shownUrl: redactUrl(text) };
}

function redactUrl(raw: string): string {
  return raw.replace(/\/\/([^/@]*)@/, (_m, userinfo: string) => `//${userinfo.split(':')[0] ?? ''}@`);
}

function isLocalHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '0.0.0.0' || host.startsWith('127.');
}

/** Address a locally started server binds: the URL's IP literal, else loopback. */
function bindAddress(host: string): string {
  return isIP(host) !== 0 && host !== '0.0.0.0' ? host : '127.0.0.1';
}

function tcpReachable(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (ok: boolean): void => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

async function waitForPort(e: Endpoint, timeoutMs: number, exited?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await tcpReachable(e.host, e.port, 500)) return;
    const why = exited?.();
    if (why !== undefined) throw new Error(`${e.label} exited before it answered on ${e.host}:${e.port}: ${why}`);
    if (Date.now() > deadline) throw new Error(`${e.label} did not answer on ${e.host}:${e.port} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], options: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CommandResult> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { timeout: options.timeoutMs ?? 60_000, env: options.env ?? process.env, cwd: options.cwd, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        done({ code, stdout: String(stdout), stderr: String(stderr) || (err && code !== 0 ? err.message : '') });
      },
    );
  });
}

async function runOrThrow(what: string, file: string, args: string[], options?: Parameters<typeof run>[2]): Promise<string> {
  const r = await run(file, args, options);
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(-2_000)}`);
  return r.stdout;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function findOnPath(name: string, extraDirs: string[] = []): Promise<string | undefined> {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...extraDirs];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

let composeCommand: Promise<string[] | undefined> | undefined;

/** `docker compose` (or legacy `docker-compose`) when a Docker engine answers, else undefined. */
function dockerComposeCommand(): Promise<string[] | undefined> {
  composeCommand ??= (async () => {
    const docker = await findOnPath('docker');
    if (!docker || (await run(docker, ['info'], { timeoutMs: 15_000 })).code !== 0) return undefined;
    if ((await run(docker, ['compose', 'version'], { timeoutMs: 15_000 })).code === 0) return [docker, 'compose'];
    const legacy = await findOnPath('docker-compose');
    return legacy ? [legacy] : undefined;
  })();
  return composeCommand;
}

// ---------------------------------------------------------------------------------------------
// Docker compose

function composeArgs(opts: EnsureDependenciesOptions): string[] {
  const file = opts.composeFile ?? resolve(dirname(fileURLToPath(import.meta.url)), '..', 'docker-compose.yml');
  return ['-f', file];
}

async function startWithCompose(compose: string[], missing: Endpoint[], opts: EnsureDependenciesOptions): Promise<Stopper> {
  const [file, ...prefix] = compose as [string, ...string[]];
  const services = missing.map((e) => e.name);
  // The compose file publishes each port from POSTGRES_PORT/NATS_PORT/REDIS_PORT, so the
  // configured URLs are honoured even when they do not use the standard ports.
  const env = { ...process.env };
  for (const e of missing) env[COMPOSE_PORT_VARS[e.name]] = String(e.port);
  opts.log(`starting ${services.join(', ')} with docker compose`);
  // --wait uses the healthchecks: a published port accepts connections (docker-proxy) before
  // the server inside the container is ready.
  await runOrThrow('docker compose up', file, [...prefix, ...composeArgs(opts), 'up', '-d', '--wait', ...services], {
    env,
    timeoutMs: 300_000,
  });
  for (const e of missing) await waitForPort(e, 60_000);
  return {
    label: `${services.join(', ')} (docker compose)`,
    stop: async () => {
      await runOrThrow('docker compose stop', file, [...prefix, ...composeArgs(opts), 'stop', ...services], { env, timeoutMs: 120_000 });
    },
    kill: () => {
      spawnSync(file, [...prefix, ...composeArgs(opts), 'stop', ...services], { env, stdio: 'ignore', timeout: 60_000 });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Local binaries

interface PostgresBinaries {
  binDir: string;
  initdb: string;
  pgCtl: string;
  psql?: string;
}

type LocalBinary = string | PostgresBinaries;

async function planLocal(missing: Endpoint[]): Promise<Array<{ endpoint: Endpoint; binary: LocalBinary | undefined }>> {
  return Promise.all(
    missing.map(async (endpoint) => {
      switch (endpoint.name) {
        case 'nats':
          return { endpoint, binary: await findOnPath('nats-server', ['/usr/sbin', '/usr/local/sbin']) };
        case 'redis':
          return { endpoint, binary: await findOnPath('redis-server', ['/usr/sbin', '/usr/local/sbin']) };
        case 'postgres':
          return { endpoint, binary: await findPostgres() };
      }
    }),
  );
}

async function findPostgres(): Promise<PostgresBinaries | undefined> {
  const dirs: string[] = [];
  const onPath = await findOnPath('pg_ctl');
  if (onPath) dirs.push(dirname(await realpath(onPath)), dirname(onPath));
  // Debian/Ubuntu and RHEL keep the server binaries off PATH; newest major first.
  for (const root of ['/usr/lib/postgresql', '/usr/pgsql']) {
    const entries = await readdir(root).catch(() => [] as string[]);
    entries.sort((a, b) => Number(b) - Number(a));
    dirs.push(...entries.map((v) => join(root, v, 'bin')));
  }
  const versioned = await readdir('/usr').catch(() => [] as string[]);
  dirs.push(...versioned.filter((d) => d.startsWith('pgsql-')).map((d) => join('/usr', d, 'bin')));
  for (const binDir of dirs) {
    const initdb = join(binDir, 'initdb');
    const pgCtl = join(binDir, 'pg_ctl');
    if ((await isExecutable(initdb)) && (await isExecutable(pgCtl))) {
      const psql = (await isExecutable(join(binDir, 'psql'))) ? join(binDir, 'psql') : await findOnPath('psql');
      return { binDir, initdb, pgCtl, ...(psql ? { psql } : {}) };
    }
  }
  return undefined;
}

async function startLocal(e: Endpoint, binary: LocalBinary, opts: EnsureDependenciesOptions): Promise<Stopper> {
  if (typeof binary !== 'string') return startPostgres(e, binary, opts);
  const address = bindAddress(e.host);
  if (e.name === 'nats') {
    const storeDir = join(opts.dataDir, 'nats');
    await mkdir(storeDir, { recursive: true });
    return startChild(e, binary, ['-js', '-sd', storeDir, '-a', address, '-p', String(e.port)], join(opts.dataDir, 'nats.log'), opts);
  }
  const dir = join(opts.dataDir, 'redis');
  await mkdir(dir, { recursive: true });
  const args = ['--port', String(e.port), '--bind', address, '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'];
  return startChild(e, binary, args, join(opts.dataDir, 'redis.log'), opts);
}

async function startChild(e: Endpoint, binary: string, args: string[], logFile: string, opts: EnsureDependenciesOptions): Promise<Stopper> {
  const log = await open(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(binary, args, { stdio: ['ignore', log.fd, log.fd], cwd: opts.dataDir });
  } finally {
    await log.close();
  }
  let exitReason: string | undefined;
  const exited = new Promise<void>((done) => {
    child.once('exit', (code, signal) => {
      exitReason = `exit ${code ?? signal ?? '?'}`;
      done();
    });
    child.once('error', (err) => {
      exitReason = err.message;
      done();
    });
  });
  const label = `${e.name} (local ${binary} on ${bindAddress(e.host)}:${e.port}, pid ${child.pid ?? '?'})`;
  opts.log(`${e.label}: starting ${binary} ${args.map(shellQuote).join(' ')} (log: ${logFile})`);
  try {
    await waitForPort(e, 30_000, () => exitReason);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${errorMessage(err)}\n${await tail(logFile)}`, { cause: err });
  }
  return {
    label,
    stop: async () => {
      if (exitReason !== undefined) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
    kill: () => {
      if (exitReason === undefined) child.kill('SIGTERM');
    },
  };
}

/** Postgres refuses to run as root: as root, commands run as the `postgres` user. */
function asPostgresUser(file: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [file, args];
  if (spawnSync('runuser', ['--help'], { stdio: 'ignore' }).status === 0) return ['runuser', ['-u', 'postgres', '--', file, ...args]];
  return ['su', ['postgres', '-s', '/bin/sh', '-c', [file, ...args].map(shellQuote).join(' ')]];
}

async function startPostgres(e: Endpoint, bin: PostgresBinaries, opts: EnsureDependenciesOptions): Promise<Stopper> {
  const dataDir = resolve(opts.dataDir, 'pg');
  const socketDir = resolve(opts.dataDir, 'pg-sock');
  const logFile = resolve(opts.dataDir, 'postgres.log');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await mkdir(socketDir, { recursive: true });
  await (await open(logFile, 'a')).close();

  if (process.getuid?.() === 0) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (id.status !== 0 || gid.status !== 0) {
      throw new Error(
        `Postgres is not reachable at ${e.shownUrl}; initdb refuses to run as root and there is no 'postgres' user to run it as: create one (useradd -r postgres), run npm start as a normal user, or install Docker`,
      );
    }
    const uid = Number(id.stdout.trim());
    const g = Number(gid.stdout.trim());
    for (const p of [dataDir, socketDir, logFile]) await chownRecursive(p, uid, g);
  }

  const hasCluster = await access(join(dataDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
  if (!hasCluster) {
    opts.log(`${e.label}: initdb ${dataDir}`);
    const [file, args] = asPostgresUser(bin.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
    await runOrThrow('initdb', file, args, { cwd: dataDir, timeoutMs: 120_000 });
  }

  const listen = e.host === 'localhost' ? 'localhost' : bindAddress(e.host);
  const serverOptions = `-p ${e.port} -k ${shellQuote(socketDir)} -c listen_addresses=${shellQuote(listen)}`;
  opts.log(`${e.label}: pg_ctl start on ${listen}:${e.port} (data: ${dataDir}, log: ${logFile})`);
  const [file, args] = asPostgresUser(bin.pgCtl, ['-D', dataDir, '-o', serverOptions, '-l', logFile, '-w', '-t', '60', 'start']);
  try {
    await runOrThrow('pg_ctl start', file, args, { cwd: dataDir, timeoutMs: 90_000 });
    await waitForPort(e, 30_000);
  } catch (err) {
    throw new Error(`${errorMessage(err)}\n${await tail(logFile)}`, { cause: err });
  }

  const stopArgs = asPostgresUser(bin.pgCtl, ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  let stopped = false;
  return {
    label: `postgres (local ${bin.binDir}/postgres on ${listen}:${e.port}, data ${dataDir})`,
    stop: async () => {
      if (stopped) return;
      await runOrThrow('pg_ctl stop', stopArgs[0], stopArgs[1], { cwd: dataDir, timeoutMs: 90_000 });
      stopped = true;
    },
    kill: () => {
      if (stopped) return;
      // The first line of postmaster.pid is the postmaster's pid; SIGINT is a fast shutdown.
      const pid = Number(spawnSync('head', ['-n1', join(dataDir, 'postmaster.pid')], { encoding: 'utf8' }).stdout?.trim());
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGINT');
        } catch {
          // already gone
        }
      }
    },
  };
}

async function chownRecursive(path: string, uid: number, gid: number): Promise<void> {
  await chown(path, uid, gid);
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) await chownRecursive(child, uid, gid);
    else await chown(child, uid, gid);
  }
}

// ---------------------------------------------------------------------------------------------
// The database named in DATABASE_URL

/** Runs one SQL statement against the `postgres` database and returns stdout (tuples only). */
type PsqlRunner = (sql: string) => Promise<string>;

/** Admin URL (database `postgres`) without the password, which travels in PGPASSWORD. */
function adminConnection(databaseUrl: string): { url: string; env: NodeJS.ProcessEnv; database: string } {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  const user = decodeURIComponent(url.username) || 'postgres';
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || user;
  url.password = '';
  url.pathname = '/postgres';
  url.search = '';
  return { url: url.toString(), env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) }, database };
}

function psqlRunner(psql: string, databaseUrl: string): PsqlRunner {
  const { url, env } = adminConnection(databaseUrl);
  return (sql) => runOrThrow('psql', psql, ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], { env, timeoutMs: 30_000 });
}

function localPsql(bin: PostgresBinaries, databaseUrl: string): PsqlRunner | undefined {
  return bin.psql ? psqlRunner(bin.psql, databaseUrl) : undefined;
}

async function hostPsql(databaseUrl: string): Promise<PsqlRunner | undefined> {
  const psql = (await findPostgres())?.psql ?? (await findOnPath('psql'));
  return psql ? psqlRunner(psql, databaseUrl) : undefined;
}

function composePsql(compose: string[], opts: EnsureDependenciesOptions): PsqlRunner {
  const [file, ...prefix] = compose as [string, ...string[]];
  return (sql) =>
    runOrThrow('psql in the postgres container', file, [
      ...prefix,
      ...composeArgs(opts),
      'exec',
      '-T',
      'postgres',
      'psql',
      '-X',
      '-q',
      '-t',
      '-A',
      '-v',
      'ON_ERROR_STOP=1',
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-c',
      sql,
    ]);
}

/**
 * Creates the database named in DATABASE_URL when it is missing. For a server this module
 * started, a failure is fatal; for one that was already running it is only reported (the
 * migration step will then fail with the server's own message).
 */
async function ensureDatabase(opts: EnsureDependenciesOptions, psql: PsqlRunner | undefined, ownServer: boolean): Promise<void> {
  const { database } = adminConnection(opts.databaseUrl);
  if (!psql) {
    opts.log(`Postgres: psql not found, not checking that database ${JSON.stringify(database)} exists`);
    return;
  }
  try {
    const literal = `'${database.replace(/'/g, "''")}'`;
    const exists = (await psql(`SELECT 1 FROM pg_database WHERE datname = ${literal}`)).trim() === '1';
    if (exists) return;
    opts.log(`Postgres: creating database ${JSON.stringify(database)}`);
    await psql(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
  } catch (err) {
    if (ownServer) throw err;
    opts.log(`Postgres: could not check or create database ${JSON.stringify(database)}: ${errorMessage(err)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const last = text.trimEnd().split('\n').slice(-lines).join('\n');
  return last ? `last lines of ${file}:\n${last}` : '';
}
