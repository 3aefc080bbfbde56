import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { AGENT_TOKENS_CHANNEL, AGENT_TOKEN_PREFIX, agentTokenHash, type AgentTokenView } from '@mcpx/contracts';
import type { AgentTokensTable, Database, Db } from '@mcpx/db';

type Row = Pick<AgentTokensTable, 'id' | 'agent_id' | 'name'> & {
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  user_may_approve: boolean;
};

/** The owner's view of a row: its state at `now`, never the hash. */
export function tokenView(row: Row, agentName: string, now = Date.now()): AgentTokenView {
  const state =
    row.revoked_at !== null
      ? 'revoked'
      : row.expires_at !== null && row.expires_at.getTime() <= now
        ? 'expired'
        : 'active';
  return {
    id: row.id,
    agent: agentName,
    name: row.name,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
    state,
    userMayApprove: row.user_may_approve,
  };
}

/**
 * `registry.agent_tokens`: the MCP endpoint's bearer tokens, one agent each. The token is made
 * here and returned once; only its SHA-256 is written. Every query names its account.
 */
export class AgentTokensRepository {
  constructor(private readonly db: Db) {}

  /**
   * A new token for the agent: `{token, row}`; the token exists nowhere else after this returns.
   * `userMayApprove`: its holder may approve its own always_ask calls (default: no).
   */
  async create(
    account: string,
    agent: string,
    name: string,
    expiresAt: Date | null,
    trx: Kysely<Database> = this.db,
    opts: { userMayApprove?: boolean } = {},
  ): Promise<{ token: string; row: Row }> {
    const token = AGENT_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const id = `at_${randomBytes(9).toString('hex')}`;
    const row = await trx
      .insertInto('registry.agent_tokens')
      .values({
        id,
        account_id: account,
        agent_id: agent,
        name,
        token_hash: agentTokenHash(token),
        expires_at: expiresAt,
        user_may_approve: opts.userMayApprove === true,
      })
      .returning(['id', 'agent_id', 'name', 'created_at', 'expires_at', 'revoked_at', 'user_may_approve'])
      .executeTakeFirstOrThrow();
    return { token, row };
  }

  /** Tokens of the agent that are neither revoked nor expired (the per-agent quota counts these). */
  async countActive(account: string, agent: string, trx: Kysely<Database> = this.db): Promise<number> {
    const r = await trx
      .selectFrom('registry.agent_tokens')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', account)
      .where('agent_id', '=', agent)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** The agent's tokens, newest first. */
  async list(account: string, agent: string): Promise<Row[]> {
    return this.db
      .selectFrom('registry.agent_tokens')
      .select(['id', 'agent_id', 'name', 'created_at', 'expires_at', 'revoked_at', 'user_may_approve'])
      .where('account_id', '=', account)
      .where('agent_id', '=', agent)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
  }

  /**
   * Revokes a token of the account: true when it was active until now (a second revoke, or an
   * unknown id, is false). Announced on {@link AGENT_TOKENS_CHANNEL} inside the same transaction,
   * so an endpoint hears of it exactly when it is committed. `recorded` is called in that
   * transaction once the token is revoked: what it writes there (the audit entry) commits with
   * the revocation or not at all.
   */
  async revoke(
    account: string,
    id: string,
    recorded: (trx: Db) => Promise<void>,
  ): Promise<{ found: boolean; revoked: boolean }> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('registry.agent_tokens')
        .select(['token_hash', 'revoked_at'])
        .where('account_id', '=', account)
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst();
      if (row === undefined) return { found: false, revoked: false };
      if (row.revoked_at !== null) return { found: true, revoked: false };
      await trx
        .updateTable('registry.agent_tokens')
        .set({ revoked_at: sql<Date>`now()` })
        .where('account_id', '=', account)
        .where('id', '=', id)
        .execute();
      await sql`select pg_notify(${AGENT_TOKENS_CHANNEL}, ${row.token_hash})`.execute(trx);
      await recorded(trx);
      return { found: true, revoked: true };
    });
  }
}
