/**
 * SetMcpServer and RefreshMcpServer when Postgres fails after the action began, against the
 * running registry and a real Postgres: the registry's statement waits behind a table lock the
 * test holds, and its connection is terminated (57P01, as a restart or failover does). The
 * answer and the stored rows agree: an `unavailable` (dependency `postgres`) says nothing was
 * written; a server that was saved is answered as saved, and a discovery that could not record is
 * a failed discovery that is run again. Before, the server's row was committed first, and its
 * pre-registered OAuth client, its discovery's record and the answer's read of its tool overrides
 * each came after it: Postgres lost at any of them answered "the action was not run (nothing was
 * written)" with the server saved (a refresh: with its discovery recorded).
 */
import { sql } from 'kysely';
import { createDb, type Db } from '@mcpx/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireError } from '@mcpx/contracts';
import { type ServerStatus } from '@mcpx/contracts';
import {
  addTool,
  echoTool,
  startOAuthServer,
  startProtectedMcpServer,
  startTestMcpServer,
  type TestMcpServer,
  type TestOAuthServer,
} from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import {
  atTheAuditEntry,
  described,
  expectNothingWritten,
  postgresLoss,
  type PostgresLoss,
} from '../support/postgres-lost.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

type Answer = { server: { name: string; status: ServerStatus; tools: Array<{ name: string }> } };

describe('SetMcpServer with Postgres lost midway: the answer tells what was written', () => {
  let h: RegistryHarness;
  let upstream: TestMcpServer;
  /** Another server with other tools, for a set that changes a server's config. */
  let other: TestMcpServer;
  let as: TestOAuthServer;
  /** A server that takes only the authorization server's tokens. */
  let protectedServer: TestMcpServer;
  /** The test's locks: connections of their own (the harness's pool is the test's reads). */
  let locks: Db;
  let lockTable: PostgresLoss['lockTable'];
  let waiting: PostgresLoss['waiting'];
  let pending: PostgresLoss['pending'];
  let withPostgresLostAt: PostgresLoss['withPostgresLostAt'];

  beforeAll(async () => {
    as = await startOAuthServer();
    [h, upstream, other, protectedServer] = await Promise.all([
      RegistryHarness.start({ projector: false, registry: { reprobe: { baseMs: 50, intervalMs: 50 } } }),
      startTestMcpServer({ tools: [echoTool()] }),
      startTestMcpServer({ tools: [addTool()] }),
      startProtectedMcpServer(as),
    ]);
    locks = createDb(h.db.url, { max: 3 });
    ({ lockTable, waiting, pending, withPostgresLostAt } = postgresLoss(h.sql, locks));
  });
  afterAll(async () => {
    await locks?.destroy();
    await h?.stop();
    await upstream?.close();
    await other?.close();
    await protectedServer?.close();
    await as?.close();
  });

  async function storedNames(): Promise<string[]> {
    const r = await sql<{ name: string }>`SELECT name FROM registry.mcp_servers ORDER BY name`.execute(h.sql);
    return r.rows.map((x) => x.name);
  }

  /** The discovery's record waits to write its event; the registry's connection is terminated there. */
  const atTheRecord = {
    table: 'event_outbox',
    mode: 'EXCLUSIVE',
    query: 'insert into "registry"."event_outbox"%',
  };

  /** The read of the server's tool overrides waits for them; the registry's connection is terminated there. */
  const overridesRead = {
    table: 'tool_permissions',
    mode: 'ACCESS EXCLUSIVE',
    query: 'select%"registry"."tool_permissions"%',
  };

  /**
   * Sends `action` with the discovery's record held at its event and the tool overrides locked
   * behind it, so that every read of the overrides after the record (none, by now) loses its
   * connection until the action answers: the answer.
   */
  async function withPostgresLostAfterTheRecord(send: () => Promise<unknown>): Promise<unknown> {
    const outbox = lockTable('event_outbox', 'EXCLUSIVE');
    let permissions: ReturnType<typeof lockTable> | undefined;
    try {
      await outbox.taken;
      const act = pending(send());
      await eventually(
        async () => {
          if (act.done()) throw new Error(`answered before its discovery recorded: ${described(await act.answer)}`);
          return (await waiting(atTheRecord.query)).length > 0 ? true : undefined;
        },
        15_000,
        "the discovery's record waiting to write its event",
      );
      // Queued behind the record's transaction (it read the overrides for its event): granted as
      // it commits, before any later read of them.
      permissions = lockTable('tool_permissions', 'ACCESS EXCLUSIVE');
      await eventually(
        async () => ((await waiting('lock table "registry"."tool_permissions"%')).length > 0 ? true : undefined),
        5_000,
        'the test waiting for the overrides table',
      );
      await outbox.release();
      await permissions.taken;
      return await eventually(
        async () => {
          if (act.done()) return { answer: await act.answer };
          for (const pid of await waiting('select%"registry"."tool_permissions"%'))
            await sql`SELECT pg_terminate_backend(${pid})`.execute(h.sql);
          return undefined;
        },
        15_000,
        'the action answering',
      ).then((got) => got.answer);
    } finally {
      await outbox.release();
      await permissions?.release();
    }
  }

  /** The server as ListMcpServers shows it once its status is `ok` with `tool` listed. */
  async function listedWith(api: ApiClient, name: string, tool: string, what: string): Promise<Answer['server']> {
    return await eventually(
      async () => {
        const { servers } = await api.act<{ servers: Array<Answer['server']> }>('ListMcpServers');
        const s = servers.find((x) => x.name === name);
        return s?.status.state === 'ok' && s.tools.some((t) => t.name.endsWith(tool)) ? s : undefined;
      },
      20_000,
      what,
    );
  }

  it('Postgres lost while the pre-registered OAuth client is written: unavailable, and nothing was written', async () => {
    const api = h.api();
    const got = await withPostgresLostAt(
      () =>
        api.act('SetMcpServer', {
          name: 'client',
          config: {
            url: upstream.url,
            auth: 'oauth',
            oauth: { clientId: 'pre-registered', clientSecret: 's3cret-value' },
          },
        }),
      { table: 'oauth_connections', mode: 'EXCLUSIVE', query: 'insert into "registry"."oauth_connections"%' },
    );
    expectNothingWritten(got);
    expect(JSON.stringify((got as WireError).details)).not.toContain('s3cret-value');
    // "Nothing was written" is true: neither the server nor its client is stored.
    expect(await storedNames()).not.toContain('client');
    const clients = await sql<{ n: number }>`SELECT count(*)::int AS n FROM registry.oauth_connections`.execute(h.sql);
    expect(clients.rows[0]?.n).toBe(0);
  });

  it("Postgres lost while the answer's tool overrides are read: unavailable, and nothing was written", async () => {
    const api = h.api();
    const got = await withPostgresLostAt(
      () => api.act('SetMcpServer', { name: 'unread', config: { url: upstream.url } }),
      overridesRead,
    );
    expectNothingWritten(got);
    expect(await storedNames()).not.toContain('unread');
  });

  it("Postgres lost while a new server's discovery is recorded: answered as saved, its discovery failed, and it is run again", async () => {
    const api = h.api();
    const secret = 'Bearer pg-lost-secret-0001';
    const got = await withPostgresLostAt(
      () =>
        api.act('SetMcpServer', { name: 'saved', config: { url: upstream.url, secretHeaders: { 'X-Key': secret } } }),
      atTheRecord,
    );
    expect(got, described(got)).not.toBeInstanceOf(Error);
    const { server } = got as Answer;
    expect(server.name).toBe('saved');
    expect(server.status.state, JSON.stringify(server.status)).toBe('error');
    expect(server.status.error).toBe('postgres was unavailable while the discovery was recorded; it is tried again');
    expect(JSON.stringify(got)).not.toContain(secret);
    expect(await storedNames()).toContain('saved');
    // Nothing of the discovery was stored (the row is `unknown`, no re-probe due): the instance
    // that answered runs it again.
    const recovered = await listedWith(api, 'saved', 'echo', 'the discovery owed, run again');
    expect(recovered.status.state).toBe('ok');
  }, 60_000);

  it("Postgres lost while a changed server's discovery is recorded: the new config is listed once it is run again", async () => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'changed', config: { url: upstream.url } });
    const got = await withPostgresLostAt(
      () => api.act('SetMcpServer', { name: 'changed', config: { url: other.url } }),
      atTheRecord,
    );
    expect(got, described(got)).not.toBeInstanceOf(Error);
    const { server } = got as Answer;
    expect(server.status.state, JSON.stringify(server.status)).toBe('error');
    expect(server.status.error).toContain('it is tried again');
    // The row still says `ok` with the old list (which the background re-probe leaves alone):
    // the discovery of the new config runs all the same.
    const recovered = await listedWith(api, 'changed', 'add', "the new config's discovery, run again");
    expect(recovered.tools.map((t) => t.name)).not.toContainEqual(expect.stringContaining('echo'));
  }, 60_000);

  it('Postgres lost after the discovery recorded, while the answer is put together: answered as saved', async () => {
    const api = h.api();
    const got = await withPostgresLostAfterTheRecord(() =>
      api.act('SetMcpServer', { name: 'answered', config: { url: upstream.url } }),
    );
    expect(got, described(got)).not.toBeInstanceOf(Error);
    const { server } = got as Answer;
    expect(server.name).toBe('answered');
    expect(server.status.state, JSON.stringify(server.status)).toBe('ok');
    expect(await storedNames()).toContain('answered');
  }, 60_000);

  it("RefreshMcpServer with Postgres lost after its discovery recorded: answered with the discovery's outcome", async () => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'refreshed', config: { url: upstream.url } });
    const got = await withPostgresLostAfterTheRecord(() => api.act('RefreshMcpServer', { name: 'refreshed' }));
    expect(got, described(got)).not.toBeInstanceOf(Error);
    const { server } = got as Answer;
    expect(server.name).toBe('refreshed');
    expect(server.status.state, JSON.stringify(server.status)).toBe('ok');
  }, 60_000);

  it('AuthorizeMcpServer with Postgres lost while its tool overrides are read: unavailable, and no authorization was started', async () => {
    const api = h.api();
    const { server } = await api.act<Answer>('SetMcpServer', {
      name: 'authorizing',
      config: { url: protectedServer.url, auth: 'oauth' },
    });
    expect(server.status.state).toBe('auth_required');
    // The server's OAuth state: an authorization that starts seals a new code verifier into it.
    const oauthState = async (): Promise<unknown> =>
      (
        await sql<{ client: Uint8Array | null; at: Date }>`
          SELECT c.client_sealed AS client, c.updated_at AS at
          FROM registry.oauth_connections c JOIN registry.mcp_servers s ON s.id = c.server_id
          WHERE s.name = 'authorizing'`.execute(h.sql)
      ).rows;
    const before = await oauthState();
    expect(before).toHaveLength(1);
    const got = await withPostgresLostAt(() => api.act('AuthorizeMcpServer', { name: 'authorizing' }), overridesRead);
    expectNothingWritten(got);
    // "Nothing was written" is true: no authorization was started.
    expect(await oauthState()).toEqual(before);
  });

  it('AuthorizeMcpServer with Postgres lost at its audit entry: the authorization is not stored, and the answer says it failed', async () => {
    const api = h.api();
    const { server } = await api.act<Answer>('SetMcpServer', {
      name: 'audited',
      config: { url: protectedServer.url, auth: 'oauth' },
    });
    expect(server.status.state).toBe('auth_required');
    // The server's pending authorization: a new one that is stored replaces its state and seals a
    // new code verifier into its client.
    const pendingAuthorization = async (): Promise<unknown> =>
      (
        await sql<{ state: string | null; client: Uint8Array | null }>`
          SELECT c.state_hash AS state, c.client_sealed AS client
          FROM registry.oauth_connections c JOIN registry.mcp_servers s ON s.id = c.server_id
          WHERE s.name = 'audited'`.execute(h.sql)
      ).rows;
    const before = await pendingAuthorization();
    expect(before).toHaveLength(1);
    const entries = async (): Promise<unknown[]> =>
      (
        await sql<{ after: unknown }>`
          SELECT after FROM registry.audit_events
          WHERE action = 'AuthorizeMcpServer' AND target = 'audited' ORDER BY id`.execute(h.sql)
      ).rows.map((r) => r.after);
    const got = await withPostgresLostAt(() => api.act('AuthorizeMcpServer', { name: 'audited' }), atTheAuditEntry, {
      releaseFirst: true,
    });
    // Before, the authorization was stored and its ticket issued first: Postgres lost at the
    // entry answered "not run (nothing was written)" with a new authorization pending.
    expect(got, described(got)).not.toBeInstanceOf(Error);
    const answer = got as Answer & { authorizationUrl?: string; authorizationError?: string };
    expect(answer.authorizationUrl).toBeUndefined();
    expect(answer.authorizationError).toContain('postgres was unavailable');
    // What the answer says is what is stored: the authorization pending before is still the one,
    // and the log records the attempt as failed, never a URL issued.
    expect(await pendingAuthorization()).toEqual(before);
    expect(await entries()).toEqual([{ outcome: 'failed', state: 'auth_required' }]);
    // Asked again, it is issued and recorded.
    const again = await api.act<{ authorizationUrl?: string }>('AuthorizeMcpServer', { name: 'audited' });
    expect(typeof again.authorizationUrl).toBe('string');
    expect(await entries()).toEqual([
      { outcome: 'failed', state: 'auth_required' },
      { outcome: 'authorization_url_issued', state: 'auth_required' },
    ]);
    expect(await pendingAuthorization()).not.toEqual(before);
  }, 60_000);

  it('AuthorizeMcpServer that registers a client, with Postgres lost at its audit entry: failed, and the registration is kept for the next attempt', async () => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'registering', config: { url: protectedServer.url, auth: 'oauth' } });
    // The server's client state is forgotten (as when the authorization server no longer knows
    // its client): the next authorization registers a new one (RFC 7591) before it starts.
    await sql`
      UPDATE registry.oauth_connections c SET client_key_id = NULL, client_sealed = NULL
      FROM registry.mcp_servers s WHERE s.id = c.server_id AND s.name = 'registering'`.execute(h.sql);
    const client = async (): Promise<unknown> =>
      (
        await sql<{ client: Uint8Array | null }>`
          SELECT c.client_sealed AS client
          FROM registry.oauth_connections c JOIN registry.mcp_servers s ON s.id = c.server_id
          WHERE s.name = 'registering'`.execute(h.sql)
      ).rows[0]?.client ?? null;
    const registrations = as.stats.registrations;
    const got = await withPostgresLostAt(
      () => api.act('AuthorizeMcpServer', { name: 'registering' }),
      atTheAuditEntry,
      { releaseFirst: true },
    );
    expect(got, described(got)).not.toBeInstanceOf(Error);
    expect((got as { authorizationError?: string }).authorizationError).toContain('postgres was unavailable');
    // The registration happened at the authorization server, outside any transaction of ours: it
    // is kept (a cache of a fact there, not the authorization the answer says was not started).
    expect(as.stats.registrations).toBe(registrations + 1);
    expect(await client()).not.toBeNull();
    // Asked again, the authorization starts with that client: nothing is registered twice.
    const again = await api.act<{ authorizationUrl?: string }>('AuthorizeMcpServer', { name: 'registering' });
    expect(typeof again.authorizationUrl).toBe('string');
    expect(as.stats.registrations).toBe(registrations + 1);
  }, 60_000);

  it('a discovery lost with the registry that owed it (stopped before running it again) is run by the next registry', async () => {
    // The registry that saves: its own re-run of the lost discovery, and its re-prober, would come
    // long after it is stopped.
    const saving = await h.addRegistry({}, { reprobe: { baseMs: 600_000, intervalMs: 600_000 } });
    const api = h.api(saving.url);
    const got = await withPostgresLostAt(
      () => api.act('SetMcpServer', { name: 'orphaned', config: { url: upstream.url } }),
      atTheRecord,
    );
    expect(got, described(got)).not.toBeInstanceOf(Error);
    expect((got as Answer).server.status.error).toContain('it is tried again');
    await saving.stop();
    // Nothing of the discovery was stored: the row is as saved, and no re-probe is due for it.
    const row = async () =>
      (
        await sql<{ next: Date | null }>`
          SELECT next_probe_at AS next FROM registry.mcp_servers WHERE name = 'orphaned'`.execute(h.sql)
      ).rows[0];
    expect((await row())?.next).toBeNull();
    // Before, nothing anywhere knew of it: the server stayed unprobed until its next set or refresh.
    const next = await h.addRegistry({}, { reprobe: { baseMs: 50, intervalMs: 50, owedAfterMs: 0 } });
    try {
      const recovered = await listedWith(
        new ApiClient(next.url, api.key),
        'orphaned',
        'echo',
        'the lost discovery, run by the next registry',
      );
      expect(recovered.status.state).toBe('ok');
      // Settled: it is not discovered again on each look.
      const owed = await sql<{ owed: Date | null }>`
        SELECT discovery_owed_at AS owed FROM registry.mcp_servers WHERE name = 'orphaned'`.execute(h.sql);
      expect(owed.rows[0]?.owed).toBeNull();
    } finally {
      await next.stop();
    }
  }, 60_000);

  it('a discovery that records settles what its save owed, pinned or not: nothing is discovered again for it', async () => {
    const api = h.api();
    await api.act('SetMcpServer', { name: 'plain', config: { url: upstream.url } });
    await api.act('SetMcpServer', { name: 'pinned', config: { url: upstream.url, pin: 'strict' } });
    const owed = await sql<{ name: string; owed: Date | null }>`
      SELECT name, discovery_owed_at AS owed FROM registry.mcp_servers
      WHERE account_id = ${api.principal} ORDER BY name`.execute(h.sql);
    expect(owed.rows).toEqual([
      { name: 'pinned', owed: null },
      { name: 'plain', owed: null },
    ]);
  });
});
