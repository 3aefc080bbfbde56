/**
 * SetMcpServer when Postgres fails after the action began, against the running registry and a
 * real Postgres: the registry's connection is terminated (57P01, as a restart or failover does)
 * while its statement waits behind a table lock the test holds. The answer and the stored rows
 * agree. An `unavailable` (dependency `postgres`) says nothing was written; a server that was
 * saved is answered as saved, its discovery failed and tried again. Before, the server's row was
 * committed first and its pre-registered OAuth client, then its discovery's outcome, written
 * after it: Postgres lost at either answered "the action was not run (nothing was written)" with
 * the server saved.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type ServerStatus } from '@mcpx/contracts';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { serverOk } from '../support/fixtures/agents.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

describe('SetMcpServer with Postgres lost midway: the answer tells what was written', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    [h, upstream] = await Promise.all([
      RegistryHarness.start({ projector: false, registry: { reprobe: { baseMs: 50, intervalMs: 50 } } }),
      startTestMcpServer({ tools: [echoTool()] }),
    ]);
  });
  afterAll(async () => {
    await h?.stop();
    await upstream?.close();
  });

  async function storedNames(): Promise<string[]> {
    const r = await sql<{ name: string }>`SELECT name FROM registry.mcp_servers ORDER BY name`.execute(h.sql);
    return r.rows.map((x) => x.name);
  }

  /**
   * Sends SetMcpServer `fields` while `table` is locked against writes, waits for the registry's
   * insert into it, terminates that statement's connection, then lets the table go: the set's
   * answer, or the error it was answered with.
   */
  async function setWithPostgresLostAt(
    api: ApiClient,
    table: string,
    fields: Record<string, unknown>,
  ): Promise<unknown> {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const holding = new Promise<void>((r) => (locked = r));
    const lock = h.sql.transaction().execute(async (trx) => {
      await sql`LOCK TABLE ${sql.table(`registry.${table}`)} IN EXCLUSIVE MODE`.execute(trx);
      locked();
      await released;
    });
    try {
      await holding;
      const answer = api.act('SetMcpServer', fields).catch((err: unknown) => err);
      let early: unknown;
      void answer.then((a) => (early = a));
      const pid = await eventually(
        async () => {
          if (early !== undefined)
            throw new Error(
              `answered before it wrote: ${early instanceof Error ? early.message : JSON.stringify(early)}`,
            );
          const r = await sql<{ pid: number }>`
            SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query ILIKE ${`insert into "registry"."${table}"%`}`.execute(h.sql);
          return r.rows[0]?.pid;
        },
        15_000,
        `the set waiting to write into ${table}`,
      );
      await sql`SELECT pg_terminate_backend(${pid})`.execute(h.sql);
      return await answer;
    } finally {
      release();
      await lock.catch(() => undefined);
    }
  }

  it('Postgres lost while the pre-registered OAuth client is written: unavailable, and nothing was written', async () => {
    const api = h.api();
    const got = await setWithPostgresLostAt(api, 'oauth_connections', {
      name: 'client',
      config: { url: upstream.url, auth: 'oauth', oauth: { clientId: 'pre-registered', clientSecret: 's3cret-value' } },
    });
    expect(got).toBeInstanceOf(WireError);
    expect((got as WireError).code, (got as Error).message).toBe('unavailable');
    expect((got as WireError).details).toMatchObject({ dependency: 'postgres' });
    expect((got as Error).message).toContain('nothing was written');
    expect(JSON.stringify((got as WireError).details)).not.toContain('s3cret-value');
    // "Nothing was written" is true: neither the server nor its client is stored.
    expect(await storedNames()).not.toContain('client');
    const clients = await sql<{ n: number }>`SELECT count(*)::int AS n FROM registry.oauth_connections`.execute(h.sql);
    expect(clients.rows[0]?.n).toBe(0);
  });

  it("Postgres lost while the discovery's outcome is recorded: answered as saved, its discovery failed, and it is run again", async () => {
    const api = h.api();
    const got = await setWithPostgresLostAt(api, 'event_outbox', { name: 'saved', config: { url: upstream.url } });
    expect(got, got instanceof Error ? `${(got as WireError).code} ${got.message}` : '').not.toBeInstanceOf(Error);
    const { server } = got as { server: { name: string; status: ServerStatus } };
    expect(server.name).toBe('saved');
    expect(server.status.state, JSON.stringify(server.status)).toBe('error');
    expect(server.status.error).toContain('postgres was unavailable');
    expect(await storedNames()).toContain('saved');
    // The discovery owed is armed with the write, so it runs once Postgres takes the record.
    const recovered = await serverOk(api, 'saved', 20_000, 'the discovery owed, run by the re-probe');
    expect(recovered.status.state).toBe('ok');
  }, 60_000);
});
