/**
 * Postgres lost at a precise point of an action against the running registry: the registry's
 * statement waits behind a table lock the test holds, and its connection is terminated (57P01,
 * as a restart or failover does). Shared by the tests that check that an action's answer and the
 * stored rows agree when that happens.
 */
import { sql } from 'kysely';
import type { Db } from '@mcpx/db';
import { expect } from 'vitest';
import { WireError } from '@mcpx/contracts';
import { eventually } from './system.js';

/** Where the registry's statement is held: `table` locked in `mode`, the statement matching `query` (ILIKE). */
export interface LossPoint {
  table: string;
  mode: string;
  query: string;
}

export interface PostgresLoss {
  /** Holds `mode` on `table` in a transaction of the test's own until the returned release is called. */
  lockTable: (table: string, mode: string) => { taken: Promise<void>; release: () => Promise<void> };
  /** The registry's statements matching `query` (ILIKE) that wait for a lock. */
  waiting: (query: string) => Promise<number[]>;
  /** `act`'s answer or the error it was answered with, and whether it has come. */
  pending: (act: Promise<unknown>) => { answer: Promise<unknown>; done: () => boolean };
  /**
   * Sends `action` while `lock.table` is locked, waits for the registry's statement matching
   * `lock.query` to wait for it, terminates that statement's connection, then lets the table go
   * (with `releaseFirst`, before the answer: for an action that writes to the table again once it
   * lost its connection): the answer, or the error it was answered with.
   */
  withPostgresLostAt: (
    send: () => Promise<unknown>,
    lock: LossPoint,
    opts?: { releaseFirst?: boolean },
  ) => Promise<unknown>;
}

/** An answer or an error as a test failure shows it. */
export const described = (got: unknown): string =>
  got instanceof Error ? `${(got as WireError).code} ${got.message}` : JSON.stringify(got);

/** An action refused because Postgres was lost: `unavailable`, naming Postgres, saying that nothing was written. */
export function expectNothingWritten(got: unknown): void {
  expect(got, described(got)).toBeInstanceOf(WireError);
  expect((got as WireError).code, described(got)).toBe('unavailable');
  expect((got as WireError).details).toMatchObject({ dependency: 'postgres' });
  expect((got as Error).message).toContain('nothing was written');
}

/**
 * The loss helpers over `db` (the test's reads: the terminations and the look at who waits) and
 * `locks` (connections of the test's own that hold the locks).
 */
export function postgresLoss(db: Db, locks: Db): PostgresLoss {
  function lockTable(table: string, mode: string): { taken: Promise<void>; release: () => Promise<void> } {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let taken!: () => void;
    const held = new Promise<void>((r) => (taken = r));
    const trx = locks.transaction().execute(async (t) => {
      await sql`LOCK TABLE ${sql.table(`registry.${table}`)} IN ${sql.raw(mode)} MODE`.execute(t);
      taken();
      await released;
    });
    return {
      taken: held,
      release: async () => {
        release();
        await trx.catch(() => undefined);
      },
    };
  }

  async function waiting(query: string): Promise<number[]> {
    const r = await sql<{ pid: number }>`
      SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE ${query}`.execute(db);
    return r.rows.map((x) => x.pid);
  }

  function pending(act: Promise<unknown>): { answer: Promise<unknown>; done: () => boolean } {
    let done = false;
    const answer = act.catch((err: unknown) => err);
    void answer.then(() => (done = true));
    return { answer, done: () => done };
  }

  async function withPostgresLostAt(
    send: () => Promise<unknown>,
    lock: LossPoint,
    opts: { releaseFirst?: boolean } = {},
  ): Promise<unknown> {
    const held = lockTable(lock.table, lock.mode);
    try {
      await held.taken;
      const act = pending(send());
      await eventually(
        async () => {
          if (act.done()) throw new Error(`answered before it got there: ${described(await act.answer)}`);
          return (await waiting(lock.query)).length > 0 ? true : undefined;
        },
        15_000,
        `the action waiting at ${lock.query}`,
      );
      // Every statement waiting there loses its connection, as in a failover: another writer's
      // statement of the same shape (a task's audit entry, written from the task's event) may be
      // waiting beside the action's, and the action's must not be left waiting behind the test's
      // lock. Until the action answers, one that comes to wait after is terminated in turn (with
      // `releaseFirst`, only those waiting now: the action's next statement must get through).
      const terminateWaiting = async (): Promise<void> => {
        for (const pid of await waiting(lock.query)) await sql`SELECT pg_terminate_backend(${pid})`.execute(db);
      };
      if (opts.releaseFirst === true) await terminateWaiting();
      else
        await eventually(
          async () => {
            await terminateWaiting();
            return act.done() ? true : undefined;
          },
          30_000,
          `the answer of the action whose statement at ${lock.query} lost its connection`,
        );
      if (opts.releaseFirst === true) await held.release();
      return await act.answer;
    } finally {
      await held.release();
    }
  }

  return { lockTable, waiting, pending, withPostgresLostAt };
}

/** The registry's audit entry waits to be inserted; its connection is terminated there. */
export const atTheAuditEntry: LossPoint = {
  table: 'audit_events',
  mode: 'EXCLUSIVE',
  query: 'insert into "registry"."audit_events"%',
};
