import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The migrated database every test database is cloned from. */
export const TEMPLATE_DB = 'mcpx_test_template';

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

/** A fresh, migrated database of this test's own, cloned from the template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `mcpx_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serviceUrls().postgres });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${TEMPLATE_DB}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serviceUrls().postgres);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: serviceUrls().postgres });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A NATS subject namespace and Redis key prefix of this test's own. */
export function uniqueNamespace(): { natsPrefix: string; redisPrefix: string } {
  const id = randomBytes(4).toString('hex');
  return { natsPrefix: `t${id}.`, redisPrefix: `mcpx-t${id}:` };
}
