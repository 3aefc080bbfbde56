// Without Docker: finding the local server binaries and running them under the data folder.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { bindAddress } from './endpoint.js';
import { findPostgres, startPostgres } from './postgres.js';
import type { PostgresBinaries } from './postgres.js';
import { errorMessage, findOnPath, shellQuote, tail, waitForPort } from './process.js';
import type { Endpoint, EnsureDependenciesOptions, Stopper } from './types.js';

/** A server binary (nats-server, redis-server) or the Postgres binaries. */
export type LocalBinary = string | PostgresBinaries;

/** For each missing endpoint, the binary that would serve it, or undefined when none is installed. */
export async function planLocal(
  missing: Endpoint[],
): Promise<Array<{ endpoint: Endpoint; binary: LocalBinary | undefined }>> {
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

/** Starts the server for one endpoint, keeping its data and log under `opts.dataDir`. */
export async function startLocal(e: Endpoint, binary: LocalBinary, opts: EnsureDependenciesOptions): Promise<Stopper> {
  if (typeof binary !== 'string') return startPostgres(e, binary, opts);
  const address = bindAddress(e.host);
  if (e.name === 'nats') {
    const storeDir = join(opts.dataDir, 'nats');
    await mkdir(storeDir, { recursive: true });
    return startChild(
      e,
      binary,
      ['-js', '-sd', storeDir, '-a', address, '-p', String(e.port)],
      join(opts.dataDir, 'nats.log'),
      opts,
    );
  }
  const dir = join(opts.dataDir, 'redis');
  await mkdir(dir, { recursive: true });
  const args = [
    '--port',
    String(e.port),
    '--bind',
    address,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
  ];
  return startChild(e, binary, args, join(opts.dataDir, 'redis.log'), opts);
}

/** Runs a server binary with its output in `logFile` until it answers on the endpoint's port. */
export async function startChild(
  e: Endpoint,
  binary: string,
  args: string[],
  logFile: string,
  opts: EnsureDependenciesOptions,
): Promise<Stopper> {
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
