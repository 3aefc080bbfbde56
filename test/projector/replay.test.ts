/**
 * A replayed event is answered from one indexed read, before
 * any transaction or lock: here the locks the projector's change path takes are held by another
 * session, and the replay is still acked (publishing nothing), while a new generation waits for
 * the lock and applies once it is released. A replay whose change is still open is not short-cut:
 * crash.test.ts (a change killed mid-publish, recovered by the redelivered event).
 */
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProjectorHarness, remoteTools } from '../support/projector-harness.js';
import { eventually } from '../support/system.js';

let h: ProjectorHarness;
beforeAll(async () => {
  h = await ProjectorHarness.start();
});
afterAll(async () => {
  await h?.stop();
});

/** Holds a transaction-scoped advisory lock of the projector's (`server:<account>:<name>`, `agent:…`) in another session. */
async function holdLock(key: string): Promise<{ release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: h.testDb.url });
  await c.connect();
  await c.query('BEGIN');
  await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
  return {
    release: async () => {
      await c.query('ROLLBACK').catch(() => undefined);
      await c.end();
    },
  };
}

/** Sessions of the test's database waiting on a lock in an advisory-lock call. */
async function waitingOnAdvisoryLock(): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`.execute(h.db);
  return r.rows[0]!.n;
}

describe('a replay is answered before any lock', () => {
  it('a replayed discovery is acked while the server lock is held; a new generation waits for it', async () => {
    await h.seedAgents(20, ['github']);
    const applied = await h.discovered('github', remoteTools(5));
    await h.idle();
    expect(h.published).toHaveLength(20);

    const lock = await holdLock(`server:${h.account}:github`);
    try {
      const before = h.published.length;
      await h.publish(h.bus.subjects.serverDiscovered(h.account, 'github'), applied);
      await h.idle();
      expect(h.published.length).toBe(before);

      // The control: a new generation takes the locked path and waits for the lock.
      await h.discovered(
        'github',
        remoteTools(5, (i) => (i === 2 ? 'Changed.' : `Tool number ${i}.`)),
      );
      await eventually(
        async () => ((await waitingOnAdvisoryLock()) > 0 ? true : undefined),
        30_000,
        'the change to wait for the server lock',
      );
      expect(h.published.length).toBe(before);
    } finally {
      await lock.release();
    }
    await h.idle();
    expect(h.published).toHaveLength(40);
    expect((await h.toolsOf('agent-0'))!.version).toBe(3);
  });

  it('a replayed agent revision is acked while the agent lock is held, publishing nothing', async () => {
    await h.discovered('linear', remoteTools(3));
    const applied = await h.agent('solo', ['linear']);
    await h.idle();
    expect(h.eventsFor('solo')).toHaveLength(1);

    const lock = await holdLock(`agent:${h.account}:solo`);
    try {
      await h.publish(h.bus.subjects.agentChanged(h.account, 'solo'), applied);
      await h.idle();
      expect(h.eventsFor('solo')).toHaveLength(1);
      // The control: the next revision waits for the lock.
      await h.agent('solo', []);
      await eventually(
        async () => ((await waitingOnAdvisoryLock()) > 0 ? true : undefined),
        30_000,
        'the agent change to wait for its lock',
      );
      expect(h.eventsFor('solo')).toHaveLength(1);
    } finally {
      await lock.release();
    }
    await h.idle();
    expect(h.eventsFor('solo')).toHaveLength(2);
    expect((await h.toolsOf('solo'))!.tools).toEqual({});
  });
});
