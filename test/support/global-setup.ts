import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tcpConnect } from 'node:net';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { TEMPLATE_PREFIX, migrateAll, serviceUrls } from './env.js';
import { buildBundles } from './bundles.js';

function answers(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const sock = tcpConnect({ host: u.hostname, port: Number(u.port || defaultPort), timeout: 1500 });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
    sock.once('timeout', () => {
      sock.destroy();
      resolve(false);
    });
  });
}

function dockerRuns(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

const stops: Array<() => Promise<unknown>> = [];

/**
 * Makes sure real Postgres, NATS (JetStream) and Redis answer. Where one does not and a Docker
 * engine runs, testcontainers starts it; otherwise the run stops with a message naming what is
 * missing. Then it migrates a template database that each test clones.
 */
async function ensureServices(): Promise<void> {
  const urls = serviceUrls();
  const checks = [
    {
      name: 'Postgres',
      env: 'DATABASE_URL',
      url: urls.postgres,
      port: 5432,
      image: 'postgres:16-alpine',
      containerPort: 5432,
    },
    { name: 'NATS', env: 'NATS_URL', url: urls.nats, port: 4222, image: 'nats:2.11-alpine', containerPort: 4222 },
    { name: 'Redis', env: 'REDIS_URL', url: urls.redis, port: 6379, image: 'redis:7-alpine', containerPort: 6379 },
  ];
  const missing = [];
  for (const c of checks) if (!(await answers(c.url, c.port))) missing.push(c);
  if (missing.length === 0) return;
  if (!dockerRuns()) {
    throw new Error(
      `Tests need real services and these do not answer: ${missing.map((m) => `${m.name} at ${m.url} (${m.env})`).join(', ')}. ` +
        'Start them (see README), point the variables at running ones, or run a Docker engine so testcontainers can start them.',
    );
  }
  const { GenericContainer, Wait } = await import('testcontainers');
  for (const m of missing) {
    let container = new GenericContainer(m.image).withExposedPorts(m.containerPort);
    if (m.name === 'Postgres')
      container = container
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
        .withWaitStrategy(Wait.forListeningPorts());
    if (m.name === 'NATS') container = container.withCommand(['-js']);
    const started = await container.start();
    stops.push(() => started.stop());
    const host = `${started.getHost()}:${started.getMappedPort(m.containerPort)}`;
    if (m.name === 'Postgres') process.env.DATABASE_URL = `postgres://postgres@${host}/postgres`;
    if (m.name === 'NATS') process.env.NATS_URL = `nats://${host}`;
    if (m.name === 'Redis') process.env.REDIS_URL = `redis://${host}`;
  }
}

/** The advisory-lock key that marks a test run as alive while its global setup holds it. */
const runLockKey = (run: string): string => `mcpx-test-run-${run}`;

/**
 * Drops the databases of runs that are gone: a run holds its lock for as long as it lives, so a
 * lock we can take belongs to a run that was killed.
 */
async function dropStaleRuns(admin: pg.Client): Promise<void> {
  const rows = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname ~ '^mcpx_(tpl|t)_[0-9a-f]{8}'`,
  );
  const byRun = new Map<string, string[]>();
  for (const { datname } of rows.rows) {
    const run = /^mcpx_(?:tpl|t)_([0-9a-f]{8})/.exec(datname)?.[1];
    if (run !== undefined) byRun.set(run, [...(byRun.get(run) ?? []), datname]);
  }
  for (const [run, names] of byRun) {
    const { rows: got } = await admin.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
      runLockKey(run),
    ]);
    if (!got[0]?.ok) continue;
    for (const name of names)
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [runLockKey(run)]);
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  await ensureServices();
  // A template of this run's own, and a lock held while the run lives: parallel runs on one
  // machine (several developers, or CI beside a session) never drop each other's databases.
  const run = randomBytes(4).toString('hex');
  const template = `${TEMPLATE_PREFIX}${run}`;
  process.env.MCPX_TEST_RUN = run;
  process.env.MCPX_TEMPLATE_DB = template;
  // The services and the CLI bundled once for the run (./bundles.ts); MCPX_TEST_BUNDLES=off runs the sources through tsx.
  let bundles: string | undefined;
  if (process.env.MCPX_TEST_BUNDLES !== 'off') {
    bundles = mkdtempSync(join(tmpdir(), `mcpx-bundles-${run}-`));
    await buildBundles(bundles);
    process.env.MCPX_TEST_BUNDLES = bundles;
  }
  const admin = new pg.Client({ connectionString: serviceUrls().postgres });
  await admin.connect();
  await admin.query('SELECT pg_advisory_lock(hashtext($1))', [runLockKey(run)]);
  await dropStaleRuns(admin);
  await admin.query(`CREATE DATABASE "${template}"`);
  const url = new URL(serviceUrls().postgres);
  url.pathname = `/${template}`;
  await migrateAll(url.toString());
  return async () => {
    const mine = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname = $2`,
      [`mcpx\\_t\\_${run}%`, template],
    );
    for (const row of mine.rows)
      await admin.query(`DROP DATABASE IF EXISTS "${row.datname}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    for (const stop of stops) await stop();
    if (bundles !== undefined) rmSync(bundles, { recursive: true, force: true });
  };
}
