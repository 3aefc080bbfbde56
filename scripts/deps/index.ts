/**
 * Brings up the infrastructure `npm start` needs — Postgres, NATS (JetStream) and Redis — when
 * it is not already reachable at the configured URLs: with `docker compose` where a Docker engine
 * runs, otherwise with local binaries under the data folder. Whatever it starts, `stop()` stops.
 */
import { mkdir } from 'node:fs/promises';
import { dockerComposeCommand, startWithCompose } from './compose.js';
import { composeCredentials } from './compose-credentials.js';
import { isLocalHost, parseEndpoint } from './endpoint.js';
import { planLocal, startLocal } from './local.js';
import { composePsql, ensureDatabase, hostPsql, localPsql } from './postgres.js';
import type { PsqlRunner } from './postgres.js';
import { errorMessage, tcpReachable } from './process.js';
import type { DependencyName, EnsureDependenciesOptions, RunningDependencies, Stopper } from './types.js';

export type { EnsureDependenciesOptions, RunningDependencies } from './types.js';
export { startAuthNats, type AuthNats } from './nats-auth.js';

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

/**
 * Logs which dependencies already answer, starts the missing ones and creates the database named
 * in `databaseUrl` if needed. On failure it stops what it had started before it throws.
 */
export async function ensureDependencies(opts: EnsureDependenciesOptions): Promise<RunningDependencies> {
  const endpoints = [
    parseEndpoint('postgres', 'Postgres', opts.databaseUrl, 5432),
    ...(opts.natsUrl !== undefined ? [parseEndpoint('nats', 'NATS', opts.natsUrl.split(',')[0] ?? '', 4222)] : []),
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
    databaseUrl: opts.databaseUrl,
    redisUrl: opts.redisUrl,
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
        remote
          .map(
            (e) =>
              `${e.label} is not reachable at ${e.shownUrl}, which is not a local address, so it is not started here`,
          )
          .join('; '),
      );
    }

    let postgresAdmin: PsqlRunner | undefined;
    if (missing.length > 0 && (await dockerComposeCommand()) !== undefined) {
      const compose = (await dockerComposeCommand())!;
      // The compose file's Postgres and Redis require passwords: generated once (kept under the
      // data folder) unless the configured URL carries one; the services get URLs holding them.
      const credentials = composeCredentials(opts);
      stoppers.push(await startWithCompose(compose, missing, opts, credentials.env));
      if (missing.some((e) => e.name === 'postgres')) result.databaseUrl = credentials.databaseUrl;
      if (missing.some((e) => e.name === 'redis')) result.redisUrl = credentials.redisUrl;
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
