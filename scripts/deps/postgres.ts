// Postgres without Docker: finding the server binaries, a private cluster under the data folder,
// psql runners, and the database named in DATABASE_URL.
import { spawnSync } from 'node:child_process';
import { access, chown, mkdir, open, readdir, realpath } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { composeArgs } from './compose.js';
import { bindAddress } from './endpoint.js';
import { errorMessage, findOnPath, isExecutable, runOrThrow, shellQuote, tail, waitForPort } from './process.js';
import type { Endpoint, EnsureDependenciesOptions, Stopper } from './types.js';

export interface PostgresBinaries {
  binDir: string;
  initdb: string;
  pgCtl: string;
  psql?: string;
}

/** The first folder with both initdb and pg_ctl (PATH first, then the distributions' own places). */
export async function findPostgres(): Promise<PostgresBinaries | undefined> {
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

/** Postgres refuses to run as root: as root, commands run as the `postgres` user. */
function asPostgresUser(file: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [file, args];
  if (spawnSync('runuser', ['--help'], { stdio: 'ignore' }).status === 0)
    return ['runuser', ['-u', 'postgres', '--', file, ...args]];
  return ['su', ['postgres', '-s', '/bin/sh', '-c', [file, ...args].map(shellQuote).join(' ')]];
}

/** Starts (creating it on first use) a private cluster in `<dataDir>/pg` with trust authentication. */
export async function startPostgres(
  e: Endpoint,
  bin: PostgresBinaries,
  opts: EnsureDependenciesOptions,
): Promise<Stopper> {
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
    const [file, args] = asPostgresUser(bin.initdb, [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-instructions',
    ]);
    await runOrThrow('initdb', file, args, { cwd: dataDir, timeoutMs: 120_000 });
  }

  const listen = e.host === 'localhost' ? 'localhost' : bindAddress(e.host);
  const serverOptions = `-p ${e.port} -k ${shellQuote(socketDir)} -c listen_addresses=${shellQuote(listen)}`;
  opts.log(`${e.label}: pg_ctl start on ${listen}:${e.port} (data: ${dataDir}, log: ${logFile})`);
  const [file, args] = asPostgresUser(bin.pgCtl, [
    '-D',
    dataDir,
    '-o',
    serverOptions,
    '-l',
    logFile,
    '-w',
    '-t',
    '60',
    'start',
  ]);
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
      const pid = Number(
        spawnSync('head', ['-n1', join(dataDir, 'postmaster.pid')], { encoding: 'utf8' }).stdout?.trim(),
      );
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
export type PsqlRunner = (sql: string) => Promise<string>;

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
  return (sql) =>
    runOrThrow('psql', psql, ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], {
      env,
      timeoutMs: 30_000,
    });
}

/** psql next to the binaries of a locally started cluster, if there is one. */
export function localPsql(bin: PostgresBinaries, databaseUrl: string): PsqlRunner | undefined {
  return bin.psql ? psqlRunner(bin.psql, databaseUrl) : undefined;
}

/** Any psql on this machine, for a server that was already running. */
export async function hostPsql(databaseUrl: string): Promise<PsqlRunner | undefined> {
  const psql = (await findPostgres())?.psql ?? (await findOnPath('psql'));
  return psql ? psqlRunner(psql, databaseUrl) : undefined;
}

/** psql inside the compose `postgres` container, as the `postgres` superuser. */
export function composePsql(compose: string[], opts: EnsureDependenciesOptions): PsqlRunner {
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
export async function ensureDatabase(
  opts: EnsureDependenciesOptions,
  psql: PsqlRunner | undefined,
  ownServer: boolean,
): Promise<void> {
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
