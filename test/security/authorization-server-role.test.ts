/**
 * The agent endpoint's authorization server out of the registry's process, as attacks: the
 * registry no longer answers a single route of it (metadata, authorize, continue, token, revoke),
 * the authorization server runs without the key ring, and whoever takes over its database
 * connection (any SQL, its own login, even `RESET ROLE`) reads and writes only the sign-ins'
 * tables and the agent-token rows it mints: never a secret, an OAuth connection, a vendor token, a
 * server's configuration, a signer, an account or the audit log, and never a token it did not write.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTHORIZATION_SERVER_ROLE, createDb, type Db } from '@mcpx/db';
import { ProcessSystem } from '../support/system.js';

/** Tables holding sealed values, keys or who may act: none may be read by the authorization server. */
const FORBIDDEN_TABLES = [
  'registry.secrets',
  'registry.oauth_connections',
  'registry.vendor_connections',
  'registry.mcp_servers',
  'registry.signers',
  'registry.accounts',
  'registry.audit_events',
  'registry.event_outbox',
  'registry.tool_permissions',
];

/** The SQLSTATE of a refused privilege. */
const DENIED = '42501';

async function sqlState(run: Promise<unknown>): Promise<string | undefined> {
  try {
    await run;
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? 'unknown';
  }
}

describe('the authorization server in its own process, with its own database role', () => {
  let system: ProcessSystem;
  /** The authorization server's pool as it opens it: its role taken on connecting. */
  let asDb: Db;
  /** A login of its own (a member of the role only), as a production deployment gives it. */
  let ownLogin: Db;
  let owner: Db;
  const login = `t_as_${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    system = await ProcessSystem.start({ authorizationServer: true, projectors: 0, proxies: 0 });
    const url = system.env.DATABASE_URL ?? '';
    owner = createDb(url, { max: 1 });
    asDb = createDb(url, { max: 1, role: AUTHORIZATION_SERVER_ROLE });
    await sql.raw(`CREATE ROLE ${login} LOGIN IN ROLE ${AUTHORIZATION_SERVER_ROLE}`).execute(owner);
    const own = new URL(url);
    own.username = login;
    own.password = '';
    ownLogin = createDb(own.toString(), { max: 1 });
  }, 180_000);

  afterAll(async () => {
    await ownLogin?.destroy();
    await asDb?.destroy();
    await sql
      .raw(`DROP ROLE IF EXISTS ${login}`)
      .execute(owner)
      .catch(() => undefined);
    await owner?.destroy();
    await system?.stop();
  });

  it('the registry answers none of its routes; the authorization server answers them all', async () => {
    const routes: Array<[string, string]> = [
      ['GET', '/.well-known/oauth-authorization-server'],
      ['GET', '/v1/oauth-server/authorize?client_id=https://example.com/c.json&redirect_uri=https://example.com/cb'],
      ['GET', `/v1/oauth-server/continue?id=si_${'0'.repeat(32)}&nonce=${'a'.repeat(43)}`],
      ['POST', '/v1/oauth-server/token'],
      ['POST', '/v1/oauth-server/revoke'],
    ];
    for (const [method, path] of routes) {
      const init = {
        method,
        redirect: 'manual' as const,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        ...(method === 'POST' ? { body: 'grant_type=refresh_token&client_id=x&refresh_token=mcpx_rt_x' } : {}),
      };
      const atRegistry = await fetch(`${system.apiUrl}${path}`, init);
      const registryBody = await atRegistry.text();
      expect(atRegistry.status, `${method} ${path} at the registry`).toBe(404);
      expect(registryBody).not.toMatch(/issuer|invalid_grant|invalid_client|Sign-in/);
      const atServer = await fetch(`${system.authUrl}${path}`, init);
      await atServer.body?.cancel();
      expect(atServer.status, `${method} ${path} at the authorization server`).not.toBe(404);
    }
    const meta = (await (await fetch(`${system.authUrl}/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string;
    };
    expect(meta.issuer).toBe(system.authUrl);
  });

  it('runs without the key ring and without NATS', () => {
    const as = system.services.find((s) => s.name === 'authorization-server');
    const environ = readFileSync(`/proc/${as?.child.pid}/environ`, 'utf8').split('\0');
    expect(environ.some((e) => e.startsWith('SECRETS_KEYRING='))).toBe(false);
    expect(environ.some((e) => e.startsWith('NATS_'))).toBe(false);
    expect(as?.child.exitCode).toBeNull();
  });

  it('its role reads no credentials table, no key and no audit entry', async () => {
    for (const table of FORBIDDEN_TABLES) {
      expect(await sqlState(sql.raw(`SELECT * FROM ${table} LIMIT 1`).execute(asDb)), table).toBe(DENIED);
      expect(await sqlState(sql.raw(`SELECT * FROM ${table} LIMIT 1`).execute(ownLogin)), table).toBe(DENIED);
    }
    // Of the agents, only the id and account a resource names; of the tokens, never a column it does not mint.
    expect(await sqlState(sql`SELECT definition_cbor FROM registry.agents LIMIT 1`.execute(asDb))).toBe(DENIED);
    expect(await sqlState(sql`SELECT id, account_id FROM registry.agents LIMIT 1`.execute(asDb))).toBeUndefined();
    expect(await sqlState(sql`SELECT name FROM registry.agent_tokens LIMIT 1`.execute(asDb))).toBe(DENIED);
    expect(await sqlState(sql`UPDATE registry.agent_tokens SET user_may_approve = true`.execute(asDb))).toBe(DENIED);
    expect(await sqlState(sql`UPDATE registry.agents SET name = name`.execute(asDb))).toBe(DENIED);
    expect(await sqlState(sql`DELETE FROM registry.agent_tokens`.execute(asDb))).toBe(DENIED);
    // What it does use stays open to it.
    expect(await sqlState(sql`SELECT id FROM registry.oauth_sign_ins LIMIT 1`.execute(asDb))).toBeUndefined();
    expect(
      await sqlState(sql`SELECT sign_in_id FROM registry.oauth_refresh_tokens LIMIT 1`.execute(asDb)),
    ).toBeUndefined();
  });

  it('with a login of its own, leaving the role (RESET ROLE) gains nothing', async () => {
    await ownLogin.connection().execute(async (c) => {
      await sql`RESET ROLE`.execute(c);
      const me = await sql<{ u: string }>`SELECT current_user AS u`.execute(c);
      expect(me.rows[0]?.u).toBe(login);
      for (const table of FORBIDDEN_TABLES)
        expect(await sqlState(sql.raw(`SELECT * FROM ${table} LIMIT 1`).execute(c)), table).toBe(DENIED);
      expect(await sqlState(sql.raw(`SET ROLE postgres`).execute(c))).toBe(DENIED);
    });
  });
});
