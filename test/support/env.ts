import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, migrate } from '@mcpx/db';

/** Postgres's SQLSTATE for an object in use (a template database another session reads). */
const OBJECT_IN_USE = '55006';

/** Names of the migrated template databases; the global setup makes one per test run. */
export const TEMPLATE_PREFIX = 'mcpx_tpl_';

export function templateDb(): string {
  const name = process.env.MCPX_TEMPLATE_DB;
  if (name === undefined)
    throw new Error('MCPX_TEMPLATE_DB is not set: run tests through vitest (its global setup makes the template)');
  return name;
}

export function serviceUrls(): { postgres: string; nats: string; redis: string } {
  return {
    postgres: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    nats: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
    redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  };
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: serviceUrls().postgres });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/**
 * A fresh, migrated database of this test's own. Under vitest it is a clone of the run's template;
 * outside it (a benchmark) it is created and migrated here, named `mcpx_bench_*`.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const underVitest = process.env.MCPX_TEMPLATE_DB !== undefined;
  const name = underVitest
    ? `mcpx_t_${process.env.MCPX_TEST_RUN ?? 'norun000'}_${randomBytes(6).toString('hex')}`
    : `mcpx_bench_${randomBytes(6).toString('hex')}`;
  await withAdmin(async (admin) => {
    if (!underVitest) {
      await admin.query(`CREATE DATABASE "${name}"`);
      return;
    }
    // Clones of one template may not run at the same instant ("source database is being
    // accessed by other users", SQLSTATE 55006 object_in_use): retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${templateDb()}"`);
        return;
      } catch (err) {
        if (attempt >= 20 || (err as { code?: unknown }).code !== OBJECT_IN_USE) throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
      }
    }
  });
  const url = new URL(serviceUrls().postgres);
  url.pathname = `/${name}`;
  if (!underVitest) await migrateAll(url.toString(), 1);
  return {
    url: url.toString(),
    name,
    drop: () => withAdmin(async (admin) => void (await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))),
  };
}

/** Brings the database at `url` to every service's schema (registry, projector, activity, proxy), on a pool of `max`. */
export async function migrateAll(url: string, max?: number): Promise<void> {
  const db = createDb(url, max === undefined ? {} : { max });
  try {
    await migrate(db, 'registry');
    await migrate(db, 'projector');
    await migrate(db, 'activity');
    await migrate(db, 'proxy');
  } finally {
    await db.destroy();
  }
}

/** A NATS subject namespace and Redis key prefix of this test's own. */
export function uniqueNamespace(): { natsPrefix: string; redisPrefix: string } {
  const id = randomBytes(4).toString('hex');
  return { natsPrefix: `t${id}.`, redisPrefix: `mcpx-t${id}:` };
}
