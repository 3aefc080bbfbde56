import { execFileSync } from 'node:child_process';
import { connect as tcpConnect } from 'node:net';
import pg from 'pg';
import { createDb, migrate } from '@mcpx/db';
import { TEMPLATE_DB, serviceUrls } from './env.js';

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
    { name: 'Postgres', env: 'DATABASE_URL', url: urls.postgres, port: 5432, image: 'postgres:16-alpine', containerPort: 5432 },
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
    if (m.name === 'Postgres') container = container.withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' }).withWaitStrategy(Wait.forListeningPorts());
    if (m.name === 'NATS') container = container.withCommand(['-js']);
    const started = await container.start();
    stops.push(() => started.stop());
    const host = `${started.getHost()}:${started.getMappedPort(m.containerPort)}`;
    if (m.name === 'Postgres') process.env.DATABASE_URL = `postgres://postgres@${host}/postgres`;
    if (m.name === 'NATS') process.env.NATS_URL = `nats://${host}`;
    if (m.name === 'Redis') process.env.REDIS_URL = `redis://${host}`;
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  await ensureServices();
  const admin = new pg.Client({ connectionString: serviceUrls().postgres });
  await admin.connect();
  try {
    // Clones of the template are per test file; drop leftovers of runs that were killed.
    const stale = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE 'mcpx_t_%' OR datname = $1`,
      [TEMPLATE_DB],
    );
    for (const row of stale.rows) await admin.query(`DROP DATABASE IF EXISTS "${row.datname}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${TEMPLATE_DB}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serviceUrls().postgres);
  url.pathname = `/${TEMPLATE_DB}`;
  const db = createDb(url.toString());
  try {
    await migrate(db, 'registry');
    await migrate(db, 'projector');
  } finally {
    await db.destroy();
  }
  return async () => {
    for (const stop of stops) await stop();
  };
}
