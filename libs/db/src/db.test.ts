import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from './db.js';
import { PostgresUnavailableError, isPostgresUnavailable } from './unavailable.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function terminate(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  } finally {
    await admin.end();
  }
}

/**
 * The loss of Postgres under a service (a restart, a failover, an admin's terminate): 57P01 on
 * every connection. A connection lent out of the pool (a transaction between two statements)
 * emitted an 'error' nobody heard, and the process ended. Real Postgres, real terminations: an
 * unheard 'error' fails this file (vitest reports the uncaught exception).
 */
describe('createDb survives connections terminated by the server (real Postgres)', () => {
  const dropped: Error[] = [];
  const db = createDb(url, { max: 2, applicationName: 'db-test', onIdleError: (err) => dropped.push(err) });
  afterAll(async () => {
    await db.destroy();
  });

  it('a connection terminated inside a transaction: the error is heard once, the transaction fails, the pool serves the next query', async () => {
    const outcome = await db
      .transaction()
      .execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
        await terminate(rows[0]!.pid);
        // The lent client hears the termination (its listener, not the pool's), then its next
        // statement fails: the caller sees an error, the process does not end.
        for (let i = 0; i < 200 && dropped.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
        await sql`SELECT 1`.execute(trx);
        return 'committed';
      })
      .catch((err: unknown) => err);
    expect(outcome).toBeInstanceOf(Error);
    // The driver says it in words only ("not queryable"): the pool types it as the outage it is.
    expect(isPostgresUnavailable(outcome)).toBe(true);
    expect(dropped).toHaveLength(1);
    expect((dropped[0] as Error & { code?: string }).code).toBe('57P01');
    const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db);
    expect(rows[0]?.one).toBe(1);
  });

  it('an idle connection terminated: told once (not by both listeners), replaced by the pool', async () => {
    dropped.length = 0;
    const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db);
    await terminate(rows[0]!.pid);
    for (let i = 0; i < 200 && dropped.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    await new Promise((r) => setTimeout(r, 100));
    expect(dropped).toHaveLength(1);
    const again = await Promise.all(
      [1, 2, 3].map(async (n) => (await sql<{ n: number }>`SELECT ${n}::int AS n`.execute(db)).rows[0]?.n),
    );
    expect(again).toEqual([1, 2, 3]);
  });
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('createDb types what failed: the store out of reach, or the statement (real Postgres)', () => {
  it('a Postgres that is not there: the statement fails as PostgresUnavailableError, the socket error kept as its cause', async () => {
    const down = createDb(`postgres://postgres@127.0.0.1:${await closedPort()}/postgres`, { max: 1 });
    const err = await sql`SELECT 1`.execute(down).catch((e: unknown) => e);
    await down.destroy();
    expect(err).toBeInstanceOf(PostgresUnavailableError);
    expect(isPostgresUnavailable(err)).toBe(true);
    expect(((err as Error).cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  it('a constraint the statement broke is its own fault: the server error with its SQLSTATE, not an outage', async () => {
    const db = createDb(url, { max: 1 });
    try {
      const err = await db
        .connection()
        .execute(async (c) => {
          await sql`CREATE TEMP TABLE typed_failure (id int PRIMARY KEY)`.execute(c);
          await sql`INSERT INTO typed_failure VALUES (1)`.execute(c);
          await sql`INSERT INTO typed_failure VALUES (1)`.execute(c);
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(pg.DatabaseError);
      expect((err as pg.DatabaseError).code).toBe('23505');
      expect(isPostgresUnavailable(err)).toBe(false);
    } finally {
      await db.destroy();
    }
  });
});
