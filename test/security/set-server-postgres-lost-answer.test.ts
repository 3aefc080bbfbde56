/**
 * SetMcpServer when Postgres fails after its discovery recorded, while the answer is put
 * together, against the running registry and a real Postgres: the registry's read of the
 * server's tool overrides waits behind a table lock the test takes once the discovery's record
 * is under way, and its connection is terminated (57P01). The server is saved and listed, so it
 * is answered as saved. Before, the answer read the overrides after the save, and Postgres lost
 * there answered "postgres is unavailable: the action was not run (nothing was written)".
 */
import { sql } from 'kysely';
import { createDb, type Db } from '@mcpx/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerStatus, WireError } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

describe('SetMcpServer with Postgres lost after its discovery recorded: answered as saved', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  /** The test's locks: connections of their own (the harness's pool is the test's reads). */
  let locks: Db;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([
      RegistryHarness.start({ projector: false }),
      startTestMcpServer({ tools: [echoTool()] }),
    ]);
    locks = createDb(h.db.url, { max: 2 });
  });
  afterAll(async () => {
    await locks?.destroy();
    await h?.stop();
    await upstream?.close();
  });

  /** Holds `mode` on `table` in a transaction of the test's own until the returned release is called. */
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

  /** The registry's statements matching `query` (ILIKE) that wait for a lock. */
  async function waiting(query: string): Promise<number[]> {
    const r = await sql<{ pid: number }>`
      SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE ${query}`.execute(h.sql);
    return r.rows.map((x) => x.pid);
  }

  it("Postgres lost while the answer reads the server's overrides: answered as saved, listed", async () => {
    const api = h.api();
    // The discovery's record is held at its event (its overrides already read in its transaction).
    const outbox = lockTable('event_outbox', 'EXCLUSIVE');
    await outbox.taken;
    let permissions: ReturnType<typeof lockTable> | undefined;
    try {
      const answer = api
        .act('SetMcpServer', { name: 'answered', config: { url: upstream.url } })
        .catch((e: unknown) => e);
      let done = false;
      void answer.then(() => (done = true));
      await eventually(
        async () => {
          if (done) throw new Error(`answered before its discovery recorded: ${JSON.stringify(await answer)}`);
          return (await waiting('insert into "registry"."event_outbox"%')).length > 0 ? true : undefined;
        },
        15_000,
        "the discovery's record waiting to write its event",
      );
      // Queued behind the record's transaction: granted as it commits, before any later read.
      permissions = lockTable('tool_permissions', 'ACCESS EXCLUSIVE');
      await eventually(
        async () => ((await waiting('lock table "registry"."tool_permissions"%')).length > 0 ? true : undefined),
        5_000,
        'the test waiting for the overrides table',
      );
      await outbox.release();
      await permissions.taken;
      // Every read of the overrides from now on loses its connection, until the set answers.
      const got = await eventually(
        async () => {
          if (done) return { answer: await answer };
          for (const pid of await waiting('select%"registry"."tool_permissions"%'))
            await sql`SELECT pg_terminate_backend(${pid})`.execute(h.sql);
          return undefined;
        },
        15_000,
        'the set answering',
      );
      const res = got.answer;
      expect(res, res instanceof Error ? `${(res as WireError).code} ${res.message}` : '').not.toBeInstanceOf(Error);
      const { server } = res as { server: { name: string; status: ServerStatus } };
      expect(server.name).toBe('answered');
      expect(server.status.state, JSON.stringify(server.status)).toBe('ok');
    } finally {
      await outbox.release();
      await permissions?.release();
    }
    const stored = await sql<{ name: string }>`SELECT name FROM registry.mcp_servers`.execute(h.sql);
    expect(stored.rows.map((r) => r.name)).toContain('answered');
  }, 60_000);
});
