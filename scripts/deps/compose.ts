// The docker compose path: the infrastructure services of the repository's compose file.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NATS_PASSWORD_ENV } from '../../libs/config/src/nats-deploy-config.js';
import { findOnPath, run, runOrThrow, waitForPort } from './process.js';
import type { DependencyName, Endpoint, EnsureDependenciesOptions, Stopper } from './types.js';

const COMPOSE_PORT_VARS: Record<DependencyName, string> = {
  postgres: 'POSTGRES_PORT',
  nats: 'NATS_PORT',
  redis: 'REDIS_PORT',
};

const NATS_PASSWORD_VARS = Object.values(NATS_PASSWORD_ENV);

let composeCommand: Promise<string[] | undefined> | undefined;

/** `docker compose` (or legacy `docker-compose`) when a Docker engine answers, else undefined. */
export function dockerComposeCommand(): Promise<string[] | undefined> {
  composeCommand ??= (async () => {
    const docker = await findOnPath('docker');
    if (!docker || (await run(docker, ['info'], { timeoutMs: 15_000 })).code !== 0) return undefined;
    if ((await run(docker, ['compose', 'version'], { timeoutMs: 15_000 })).code === 0) return [docker, 'compose'];
    const legacy = await findOnPath('docker-compose');
    return legacy ? [legacy] : undefined;
  })();
  return composeCommand;
}

/** `-f <compose file>`: the configured one, else the repository's `docker-compose.yml`. */
export function composeArgs(opts: EnsureDependenciesOptions): string[] {
  const file = opts.composeFile ?? resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docker-compose.yml');
  return ['-f', file];
}

/**
 * Starts the compose services of the missing endpoints and waits until they are healthy;
 * `extraEnv` reaches the compose file's variables (the NATS users' passwords, say).
 */
export async function startWithCompose(
  compose: string[],
  missing: Endpoint[],
  opts: EnsureDependenciesOptions,
  extraEnv: Record<string, string> = {},
): Promise<Stopper> {
  const [file, ...prefix] = compose as [string, ...string[]];
  const services = missing.map((e) => e.name);
  // The compose file publishes each port from POSTGRES_PORT/NATS_PORT/REDIS_PORT, so the
  // configured URLs are honoured even when they do not use the standard ports.
  const env: NodeJS.ProcessEnv = { ...process.env, ...extraEnv };
  // The compose file requires the NATS users' passwords even when its NATS is not the one started
  // (Postgres or Redis only): values nobody uses fill them in for that case.
  for (const name of NATS_PASSWORD_VARS) env[name] ??= randomBytes(24).toString('base64url');
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
      await runOrThrow('docker compose stop', file, [...prefix, ...composeArgs(opts), 'stop', ...services], {
        env,
        timeoutMs: 120_000,
      });
    },
    kill: () => {
      spawnSync(file, [...prefix, ...composeArgs(opts), 'stop', ...services], {
        env,
        stdio: 'ignore',
        timeout: 60_000,
      });
    },
  };
}
