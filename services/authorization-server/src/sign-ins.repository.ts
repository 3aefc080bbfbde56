import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import {
  AGENT_TOKENS_CHANNEL,
  AGENT_TOKEN_PREFIX,
  agentTokenHash,
  randomSignInSecret,
  signInSecretHash,
} from '@mcpx/contracts';
import type { Database, Db } from '@mcpx/db';
import {
  ACCESS_TOKEN_MS,
  AUTHORIZATION_CODE_MS,
  GrantRefused,
  MAX_ACTIVE_TOKENS_PER_AGENT,
  REFRESH_PREFIX,
  REFRESH_TOKEN_MS,
  SIGN_IN_PENDING_MS,
  settled,
  tokenName,
  type IssuedTokens,
} from './sign-in-secrets.js';
import { NO_BOUNDS, pendingLimitFor, type PendingSignInBounds, type PendingSignInLimit } from './pending-sign-ins.js';

type OAuthSignInsTable = Database['registry.oauth_sign_ins'];

export type SignInRow = Omit<OAuthSignInsTable, 'created_at'> & { created_at: Date };

/**
 * `registry.oauth_sign_ins` and `registry.oauth_refresh_tokens`: every step of an OAuth sign-in
 * to the agent endpoint as one conditional update (a step happens once, whoever races), secrets
 * kept as hashes. A signed-in client's access token is a `registry.agent_tokens` row of the
 * agent (its id `at_…`): refreshed in place (new hash, new expiry), revoked with a notice on
 * {@link AGENT_TOKENS_CHANNEL} in the same transaction, exactly like an agent token.
 */
export class SignInsRepository {
  constructor(
    private readonly db: Db,
    private readonly bounds: PendingSignInBounds = NO_BOUNDS,
  ) {}

  /**
   * A new pending sign-in, or the limit that refuses it: the account's pending maximum, the
   * client's share of it, the requesting address's (across accounts), or the database's.
   */
  async createPending(input: {
    account: string;
    agent: string;
    clientId: string;
    clientName: string;
    redirectUri: string;
    resource: string;
    scope: string | null;
    state: string | null;
    codeChallenge: string;
    browserHash: string;
    /** SHA-256 of the client address that asked (`requesterHash`). */
    requesterHash: string;
  }): Promise<{ id: string } | { refused: PendingSignInLimit }> {
    const id = `si_${randomBytes(16).toString('hex')}`;
    return this.db.transaction().execute(async (trx) => {
      // One writer per account, and per requesting address, at a time: two requests cannot both pass a count.
      // The account's row is locked through a function of the schema's owner: this role may not update accounts.
      await sql`select registry.lock_account_for_sign_in(${input.account})`.execute(trx);
      await sql`select pg_advisory_xact_lock(hashtext(${`oauth-sign-in-requester:${input.requesterHash}`}))`.execute(
        trx,
      );
      // Requests that ended or were never finished go after a day.
      await trx
        .deleteFrom('registry.oauth_sign_ins')
        .where('account_id', '=', input.account)
        .where('status', 'in', ['pending', 'approved', 'denied', 'code_issued', 'ended'])
        .where('expires_at', '<', sql<Date>`now() - interval '1 day'`)
        .execute();
      const refused = await pendingLimitFor(trx, this.bounds, input);
      if (refused !== undefined) return { refused };
      await trx
        .insertInto('registry.oauth_sign_ins')
        .values({
          id,
          account_id: input.account,
          agent_id: input.agent,
          client_id: input.clientId,
          client_name: input.clientName,
          redirect_uri: input.redirectUri,
          resource: input.resource,
          scope: input.scope,
          state: input.state,
          code_challenge: input.codeChallenge,
          browser_hash: input.browserHash,
          status: 'pending',
          continue_hash: null,
          code_hash: null,
          code_expires_at: null,
          token_id: null,
          expires_at: new Date(Date.now() + SIGN_IN_PENDING_MS),
          decided_at: null,
          decided_by: null,
          ended_at: null,
          end_reason: null,
          requester_hash: input.requesterHash,
        })
        .execute();
      return { id };
    });
  }

  /**
   * The continue step, once: a decided sign-in whose browser (cookie) and approver (nonce) both
   * match moves on. Approved: a code (returned, its hash stored, 60 s); denied: the sign-in ends.
   * Undefined: no such decided sign-in for this browser and nonce (nothing changes).
   */
  async continueDecided(
    id: string,
    browserHash: string,
    nonceHash: string,
  ): Promise<{ row: SignInRow; code?: string } | undefined> {
    const code = randomSignInSecret();
    const approved = await this.db
      .updateTable('registry.oauth_sign_ins')
      .set({
        status: 'code_issued',
        code_hash: signInSecretHash(code),
        code_expires_at: new Date(Date.now() + AUTHORIZATION_CODE_MS),
        continue_hash: null,
      })
      .where('id', '=', id)
      .where('status', '=', 'approved')
      .where('browser_hash', '=', browserHash)
      .where('continue_hash', '=', nonceHash)
      .where('expires_at', '>', sql<Date>`now()`)
      .returningAll()
      .executeTakeFirst();
    if (approved !== undefined) return { row: approved, code };
    const denied = await this.db
      .updateTable('registry.oauth_sign_ins')
      .set({ status: 'ended', end_reason: 'denied', ended_at: sql<Date>`now()`, continue_hash: null })
      .where('id', '=', id)
      .where('status', '=', 'denied')
      .where('browser_hash', '=', browserHash)
      .where('continue_hash', '=', nonceHash)
      .returningAll()
      .executeTakeFirst();
    return denied === undefined ? undefined : { row: denied };
  }

  /** A sign-in by id (for saying why a continue was refused). */
  async find(id: string): Promise<SignInRow | undefined> {
    return this.db.selectFrom('registry.oauth_sign_ins').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Redeems an authorization code: `check` sees the sign-in and throws to refuse (a wrong
   * verifier, client or redirect). The code is spent whatever the outcome: a refused attempt ends
   * the sign-in, and a code presented again ends it too and revokes its tokens (RFC 6749 §4.1.2).
   */
  async redeem(code: string, check: (row: SignInRow) => void): Promise<IssuedTokens> {
    const hash = signInSecretHash(code);
    return settled(
      await this.db.transaction().execute(async (trx): Promise<IssuedTokens | GrantRefused> => {
        const row = await trx
          .selectFrom('registry.oauth_sign_ins')
          .selectAll()
          .where('code_hash', '=', hash)
          .forUpdate()
          .executeTakeFirst();
        if (row === undefined) return new GrantRefused('unknown', 'the authorization code is not valid');
        if (row.status !== 'code_issued') {
          if (row.status === 'active') await this.endIn(trx, row, 'code_replayed');
          return new GrantRefused('replayed', 'the authorization code was already used');
        }
        if (row.code_expires_at === null || row.code_expires_at.getTime() <= Date.now()) {
          await this.endIn(trx, row, 'code_expired');
          return new GrantRefused('expired', 'the authorization code has expired');
        }
        try {
          check(row);
        } catch (err) {
          if (!(err instanceof GrantRefused)) throw err;
          await this.endIn(trx, row, 'code_misused');
          return err;
        }
        // One writer per agent at a time (as CreateAgentToken: the agent's row locked, through a function of the
        // schema's owner): two redemptions cannot both pass the count.
        await sql`select registry.lock_agent_for_sign_in(${row.account_id}, ${row.agent_id})`.execute(trx);
        const active = await trx
          .selectFrom('registry.agent_tokens')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('account_id', '=', row.account_id)
          .where('agent_id', '=', row.agent_id)
          .where('revoked_at', 'is', null)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
          .executeTakeFirstOrThrow();
        if (Number(active.n) >= MAX_ACTIVE_TOKENS_PER_AGENT) {
          await this.endIn(trx, row, 'agent_token_quota');
          return new GrantRefused(
            'quota',
            `the agent already has ${MAX_ACTIVE_TOKENS_PER_AGENT} active tokens: its owner must revoke one first`,
          );
        }
        const accessToken = AGENT_TOKEN_PREFIX + randomSignInSecret();
        const tokenId = `at_${randomBytes(9).toString('hex')}`;
        await trx
          .insertInto('registry.agent_tokens')
          .values({
            id: tokenId,
            account_id: row.account_id,
            agent_id: row.agent_id,
            name: tokenName(row.client_name, row.client_id),
            token_hash: agentTokenHash(accessToken),
            expires_at: new Date(Date.now() + ACCESS_TOKEN_MS),
          })
          .execute();
        const refreshToken = await this.newRefresh(trx, row.id);
        const signIn = await trx
          .updateTable('registry.oauth_sign_ins')
          .set({ status: 'active', token_id: tokenId, expires_at: new Date(Date.now() + REFRESH_TOKEN_MS) })
          .where('id', '=', row.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { accessToken, refreshToken, expiresInSeconds: ACCESS_TOKEN_MS / 1000, signIn };
      }),
    );
  }

  /**
   * Rotates a refresh token: the presented one is spent, a new one and a new access token (the
   * same token row, a new hash and expiry; the old access token refused at once) are returned.
   * A spent one presented again ends the sign-in and revokes its access token (a stolen token
   * and its rightful holder cannot both go on). `check` throws to refuse (another client).
   */
  async refresh(refreshToken: string, check: (row: SignInRow) => void): Promise<IssuedTokens> {
    if (!refreshToken.startsWith(REFRESH_PREFIX)) throw new GrantRefused('unknown', 'the refresh token is not valid');
    const hash = signInSecretHash(refreshToken);
    return settled(
      await this.db.transaction().execute(async (trx): Promise<IssuedTokens | GrantRefused> => {
        const rt = await trx
          .selectFrom('registry.oauth_refresh_tokens')
          .selectAll()
          .where('token_hash', '=', hash)
          .forUpdate()
          .executeTakeFirst();
        if (rt === undefined) return new GrantRefused('unknown', 'the refresh token is not valid');
        const row = await trx
          .selectFrom('registry.oauth_sign_ins')
          .selectAll()
          .where('id', '=', rt.sign_in_id)
          .forUpdate()
          .executeTakeFirstOrThrow();
        if (rt.spent_at !== null) {
          if (row.status === 'active') await this.endIn(trx, row, 'refresh_replayed');
          return new GrantRefused('replayed', 'the refresh token was already used: the sign-in is revoked');
        }
        if (row.status !== 'active') return new GrantRefused('ended', 'the sign-in has ended');
        if (rt.expires_at.getTime() <= Date.now()) {
          await this.endIn(trx, row, 'refresh_expired');
          return new GrantRefused('expired', 'the refresh token has expired');
        }
        try {
          check(row);
        } catch (err) {
          if (!(err instanceof GrantRefused)) throw err;
          await this.endIn(trx, row, 'refresh_misused');
          return err;
        }
        const token =
          row.token_id === null
            ? undefined
            : await trx
                .selectFrom('registry.agent_tokens')
                .select(['id', 'token_hash', 'revoked_at'])
                .where('id', '=', row.token_id)
                .where('account_id', '=', row.account_id)
                .forUpdate()
                .executeTakeFirst();
        if (token === undefined || token.revoked_at !== null) {
          // The owner revoked it (RevokeAgentToken) or the agent went: the sign-in ends with it.
          await this.endIn(trx, row, 'revoked');
          return new GrantRefused('revoked', 'the sign-in was revoked');
        }
        await trx
          .updateTable('registry.oauth_refresh_tokens')
          .set({ spent_at: sql<Date>`now()` })
          .where('token_hash', '=', hash)
          .execute();
        // Spent tokens are kept while they could still be replayed: until their own expiry.
        await trx
          .deleteFrom('registry.oauth_refresh_tokens')
          .where('sign_in_id', '=', row.id)
          .where('expires_at', '<', sql<Date>`now()`)
          .execute();
        const next = await this.newRefresh(trx, row.id);
        const accessToken = AGENT_TOKEN_PREFIX + randomSignInSecret();
        await trx
          .updateTable('registry.agent_tokens')
          .set({ token_hash: agentTokenHash(accessToken), expires_at: new Date(Date.now() + ACCESS_TOKEN_MS) })
          .where('id', '=', token.id)
          .execute();
        await sql`select pg_notify(${AGENT_TOKENS_CHANNEL}, ${token.token_hash})`.execute(trx);
        const signIn = await trx
          .updateTable('registry.oauth_sign_ins')
          .set({ expires_at: new Date(Date.now() + REFRESH_TOKEN_MS) })
          .where('id', '=', row.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { accessToken, refreshToken: next, expiresInSeconds: ACCESS_TOKEN_MS / 1000, signIn };
      }),
    );
  }

  /**
   * RFC 7009: the client signs out with its access or refresh token. A token of a live sign-in of
   * this client ends it (its access token revoked and announced); anything else changes nothing.
   * True when a sign-in ended.
   */
  async revokeByToken(token: string, clientId: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      let row: SignInRow | undefined;
      if (token.startsWith(REFRESH_PREFIX)) {
        const rt = await trx
          .selectFrom('registry.oauth_refresh_tokens')
          .select('sign_in_id')
          .where('token_hash', '=', signInSecretHash(token))
          .executeTakeFirst();
        if (rt !== undefined)
          row = await trx
            .selectFrom('registry.oauth_sign_ins')
            .selectAll()
            .where('id', '=', rt.sign_in_id)
            .forUpdate()
            .executeTakeFirst();
      } else if (token.startsWith(AGENT_TOKEN_PREFIX)) {
        row = await trx
          .selectFrom('registry.oauth_sign_ins as s')
          .innerJoin('registry.agent_tokens as t', (j) =>
            j.onRef('t.id', '=', 's.token_id').onRef('t.account_id', '=', 's.account_id'),
          )
          .selectAll('s')
          .where('t.token_hash', '=', agentTokenHash(token))
          .forUpdate()
          .executeTakeFirst();
      }
      if (row === undefined || row.status !== 'active' || row.client_id !== clientId) return false;
      await this.endIn(trx, row, 'client_revoked');
      return true;
    });
  }

  private async newRefresh(trx: Kysely<Database>, signInId: string): Promise<string> {
    const token = REFRESH_PREFIX + randomSignInSecret();
    await trx
      .insertInto('registry.oauth_refresh_tokens')
      .values({
        token_hash: signInSecretHash(token),
        sign_in_id: signInId,
        expires_at: new Date(Date.now() + REFRESH_TOKEN_MS),
        spent_at: null,
      })
      .execute();
    return token;
  }

  /** Ends a sign-in inside `trx`: no more codes or refreshes, its access token revoked and announced. */
  private async endIn(trx: Kysely<Database>, row: SignInRow, reason: string): Promise<void> {
    await trx
      .updateTable('registry.oauth_sign_ins')
      .set({ status: 'ended', end_reason: reason, ended_at: sql<Date>`now()`, code_hash: null, continue_hash: null })
      .where('id', '=', row.id)
      .execute();
    if (row.token_id === null) return;
    const revoked = await trx
      .updateTable('registry.agent_tokens')
      .set({ revoked_at: sql<Date>`now()` })
      .where('id', '=', row.token_id)
      .where('account_id', '=', row.account_id)
      .where('revoked_at', 'is', null)
      .returning('token_hash')
      .executeTakeFirst();
    if (revoked !== undefined) await sql`select pg_notify(${AGENT_TOKENS_CHANNEL}, ${revoked.token_hash})`.execute(trx);
  }
}
