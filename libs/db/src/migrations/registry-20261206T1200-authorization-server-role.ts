import { sql, type Kysely } from 'kysely';

/** Frozen with the migration: the role's name as it was created (`AUTHORIZATION_SERVER_ROLE`). */
const ROLE = 'mcpx_authorization_server';

/**
 * The database role of the agent endpoint's authorization server (`@mcpx/authorization-server`,
 * its own process), with grants on only what it uses: the sign-ins and refresh tokens; of the
 * agent tokens, the rows it mints, refreshes and revokes (never a name it did not write, never
 * `user_may_approve`); of the agents, the id and account a `resource` names. Nothing else of the
 * schema: not the accounts, signers, servers, secrets, OAuth connections, vendor connections or
 * the audit log. The account's and the agent's rows, which its steps lock against the registry's
 * own writers, are locked through two functions of the schema's owner, so the role needs no
 * UPDATE on either table.
 *
 * The role does not log in; the process takes it on connecting (`createDb`'s `role`), whatever
 * its login. In production its login is its own (a member of the role and of nothing else), so a
 * compromised authorization server cannot leave it. A migrating user without CREATEROLE leaves
 * the role to the operator (it is said in a notice; the grants follow once it exists).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${ROLE}') THEN
    CREATE ROLE ${ROLE} NOLOGIN;
  END IF;
EXCEPTION
  WHEN duplicate_object OR unique_violation THEN NULL;
  WHEN insufficient_privilege THEN RAISE NOTICE 'role ${ROLE} not created (no CREATEROLE): create it, then run the grants of this migration';
END $$`,
    )
    .execute(db);
  await sql`CREATE FUNCTION registry.lock_account_for_sign_in(account text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
    BEGIN PERFORM 1 FROM registry.accounts WHERE id = account FOR UPDATE; END $$`.execute(db);
  await sql`CREATE FUNCTION registry.lock_agent_for_sign_in(account text, agent text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
    BEGIN PERFORM 1 FROM registry.agents WHERE account_id = account AND id = agent FOR UPDATE; END $$`.execute(db);
  await sql`REVOKE ALL ON FUNCTION registry.lock_account_for_sign_in(text) FROM PUBLIC`.execute(db);
  await sql`REVOKE ALL ON FUNCTION registry.lock_agent_for_sign_in(text, text) FROM PUBLIC`.execute(db);
  const exists = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_roles WHERE rolname = ${ROLE}`.execute(db);
  if ((exists.rows[0]?.n ?? 0) === 0) return;
  for (const grant of [
    `GRANT USAGE ON SCHEMA registry TO ${ROLE}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON registry.oauth_sign_ins TO ${ROLE}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON registry.oauth_refresh_tokens TO ${ROLE}`,
    `GRANT SELECT (id, account_id, agent_id, token_hash, expires_at, revoked_at),
       INSERT (id, account_id, agent_id, name, token_hash, expires_at),
       UPDATE (token_hash, expires_at, revoked_at) ON registry.agent_tokens TO ${ROLE}`,
    `GRANT SELECT (id, account_id) ON registry.agents TO ${ROLE}`,
    `GRANT EXECUTE ON FUNCTION registry.lock_account_for_sign_in(text) TO ${ROLE}`,
    `GRANT EXECUTE ON FUNCTION registry.lock_agent_for_sign_in(text, text) TO ${ROLE}`,
  ])
    await sql.raw(grant).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS registry.lock_agent_for_sign_in(text, text)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS registry.lock_account_for_sign_in(text)`.execute(db);
  // The role is the cluster's (other databases may hold its grants): it is left, without its grants here.
  const exists = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_roles WHERE rolname = ${ROLE}`.execute(db);
  if ((exists.rows[0]?.n ?? 0) === 0) return;
  await sql.raw(`REVOKE ALL ON ALL TABLES IN SCHEMA registry FROM ${ROLE}`).execute(db);
  await sql.raw(`REVOKE ALL ON SCHEMA registry FROM ${ROLE}`).execute(db);
}
