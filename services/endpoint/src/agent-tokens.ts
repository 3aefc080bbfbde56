import { AGENT_TOKENS_CHANNEL, agentTokenHash, isAgentTokenShape } from '@mcpx/contracts';
import { listenChannel, type ChannelListener } from '@mcpx/db';
import type { EndpointReads } from '@mcpx/stored';
import type { Logger } from '@mcpx/log';

/** Who a valid token speaks for. */
export interface TokenGrant {
  /** The token's id (never the token). */
  id: string;
  account: string;
  agent: string;
  agentName: string;
  /** Milliseconds since the epoch; undefined: until revoked. */
  expiresAt?: number;
  /** The holder may approve the token's own always_ask calls (the endpoint asks it, an elicitation). */
  userMayApprove: boolean;
}

/** Why a token was refused (said to the client as `invalid_token`, with no more detail than this). */
export type TokenRefusal = 'missing' | 'malformed' | 'unknown' | 'expired' | 'revoked';

/** Why a watched token stopped granting (`AgentTokens.watch`). */
export type TokenEnd = 'revoked' | 'expired';

/** A verdict is kept this long at most (a backstop: revocations arrive on the channel at once). */
const CACHE_MS = 60_000;
const MAX_CACHED = 50_000;
/** The longest delay a Node timer takes; a later expiry is reached in steps of it. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * How often the tokens of open streams are read again: a backstop for what sends no notice (an
 * agent deleted takes its tokens with it) and for notices lost while the channel was down.
 */
const RECHECK_MS = 15_000;
/** Token hashes read in one recheck query. */
const RECHECK_BATCH = 500;

/**
 * Checks the endpoint's bearer tokens against `registry.agent_tokens` (by SHA-256, read only).
 * A valid token's grant is cached for a minute; the registry's revocation notice
 * (`AGENT_TOKENS_CHANNEL`, sent in the revoking transaction) drops it at once. While the
 * listening connection is down nothing is cached, so a revocation is never missed: every request
 * reads the row.
 */
export class AgentTokens {
  private readonly cache = new Map<string, { grant: TokenGrant; at: number }>();
  private listener: ChannelListener | undefined;
  private recheck: NodeJS.Timeout | undefined;
  private rechecking = false;
  /** Counts revocation notices: a read that one overtook does not cache what it read. */
  private notices = 0;
  /** The token hash each grant was read for (the channel names hashes; a grant never carries one). */
  private readonly hashes = new WeakMap<TokenGrant, string>();
  /** Who is told when a token stops granting (open notification streams), by token hash. */
  private readonly watchers = new Map<string, Set<(why: TokenEnd) => void>>();

  constructor(
    private readonly db: EndpointReads,
    private readonly databaseUrl: string,
    private readonly log: Logger,
  ) {}

  /**
   * Opens the listening connection (`listenChannel`: reopened when it drops); resolves once it
   * listens or its first attempt failed (every request then reads the row until it is back).
   */
  async start(): Promise<void> {
    this.recheck = setInterval(() => void this.recheckWatched(), RECHECK_MS);
    this.recheck.unref();
    let heard = false;
    await new Promise<void>((settled) => {
      this.listener = listenChannel(this.databaseUrl, AGENT_TOKENS_CHANNEL, {
        applicationName: 'endpoint-tokens',
        onNotice: (hash) => {
          if (hash === '') return;
          this.notices++;
          this.cache.delete(hash);
          // Every notice means the hash no longer grants (revoked, its sign-in ended, or replaced by
          // a refresh): its open streams end now, without a read.
          this.end(hash, 'revoked');
        },
        onListening: () => {
          heard = true;
          settled();
          // Notices sent while the channel was down are lost: the watched tokens are read again.
          void this.recheckWatched();
        },
        onLost: (err) => {
          this.cache.clear();
          this.log.warn(
            heard
              ? 'token revocation channel lost: reconnecting'
              : 'token revocation channel unavailable: tokens are read on every request until it is back',
            { ...(err !== undefined ? { err } : {}) },
          );
          settled();
        },
      });
    });
  }

  /**
   * Reads every watched token again, in batches, and ends those that no longer grant (revoked,
   * gone with their agent, expired). A failed read ends nothing: the next round decides.
   */
  private async recheckWatched(): Promise<void> {
    if (this.rechecking || this.watchers.size === 0) return;
    this.rechecking = true;
    try {
      const hashes = [...this.watchers.keys()];
      for (let i = 0; i < hashes.length; i += RECHECK_BATCH) {
        const batch = hashes.slice(i, i + RECHECK_BATCH);
        const live = new Set(await this.granting(batch));
        for (const hash of batch) if (!live.has(hash)) this.end(hash, 'revoked');
      }
    } catch (err) {
      this.log.warn('open streams not rechecked: token read failed', { err: err as Error });
    } finally {
      this.rechecking = false;
    }
  }

  /** Which of `hashes` still grant: their row is there, with its agent, not revoked, not expired. */
  private async granting(hashes: string[]): Promise<string[]> {
    const rows = await this.db
      .selectFrom('registry.agent_tokens as t')
      .innerJoin('registry.agents as a', (j) =>
        j.onRef('a.id', '=', 't.agent_id').onRef('a.account_id', '=', 't.account_id'),
      )
      .select('t.token_hash')
      .where('t.token_hash', 'in', hashes)
      .where('t.revoked_at', 'is', null)
      .where((eb) => eb.or([eb('t.expires_at', 'is', null), eb('t.expires_at', '>', new Date())]))
      .execute();
    return rows.map((r) => r.token_hash);
  }

  private end(hash: string, why: TokenEnd): void {
    const ended = this.watchers.get(hash);
    if (ended === undefined) return;
    this.watchers.delete(hash);
    for (const f of ended) f(why);
  }

  /**
   * Calls `ended` once when the grant's token stops granting: revoked (the registry's notice on
   * the channel, heard by every instance; or found revoked or gone with its agent by the recheck
   * every 15 s and when the channel comes back after a loss) or expired (a timer at its expiry). The returned function stops watching. A grant
   * not read by this instance's `verify` is ended at once.
   */
  watch(grant: TokenGrant, ended: (why: TokenEnd) => void): () => void {
    const hash = this.hashes.get(grant);
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const once = (why: TokenEnd): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.watchers.get(hash ?? '')?.delete(once);
      ended(why);
    };
    if (hash === undefined) {
      queueMicrotask(() => once('revoked'));
      return () => undefined;
    }
    const set = this.watchers.get(hash) ?? new Set();
    set.add(once);
    this.watchers.set(hash, set);
    const expiresAt = grant.expiresAt;
    const schedule = (): void => {
      if (expiresAt === undefined || done) return;
      const left = expiresAt - Date.now();
      if (left <= 0) return once('expired');
      timer = setTimeout(schedule, Math.min(left, MAX_TIMER_MS));
      timer.unref();
    };
    schedule();
    return () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const watching = this.watchers.get(hash);
      watching?.delete(once);
      if (watching?.size === 0) this.watchers.delete(hash);
    };
  }

  async close(): Promise<void> {
    clearInterval(this.recheck);
    await this.listener?.stop();
  }

  /** The grant of an `Authorization` header's bearer token, or why it is refused. */
  async verify(authorization: string | null): Promise<TokenGrant | TokenRefusal> {
    if (authorization === null || authorization === '') return 'missing';
    const m = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
    if (m === null || !isAgentTokenShape(m[1] ?? '')) return 'malformed';
    const hash = agentTokenHash(m[1] as string);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit !== undefined && now - hit.at < CACHE_MS) {
      if (hit.grant.expiresAt !== undefined && hit.grant.expiresAt <= now) return 'expired';
      return hit.grant;
    }
    let notices = this.notices;
    let grant = await this.read(hash);
    if (notices !== this.notices) {
      // A notice overtook the read and may have been this token's: read it again, so that a
      // stream opened with this grant does not outlive a revocation it never heard of.
      notices = this.notices;
      grant = await this.read(hash);
    }
    if (typeof grant === 'string') return grant;
    this.hashes.set(grant, hash);
    if (this.listener?.listening === true && notices === this.notices) {
      this.cache.set(hash, { grant, at: now });
      if (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
    }
    return grant;
  }

  /** The row of a token hash as a grant, or why it does not grant. */
  private async read(hash: string): Promise<TokenGrant | TokenRefusal> {
    const now = Date.now();
    const row = await this.db
      .selectFrom('registry.agent_tokens as t')
      .innerJoin('registry.agents as a', (j) =>
        j.onRef('a.id', '=', 't.agent_id').onRef('a.account_id', '=', 't.account_id'),
      )
      .select(['t.id', 't.account_id', 't.agent_id', 'a.name', 't.expires_at', 't.revoked_at', 't.user_may_approve'])
      .where('t.token_hash', '=', hash)
      .executeTakeFirst();
    if (row === undefined) return 'unknown';
    if (row.revoked_at !== null) return 'revoked';
    if (row.expires_at !== null && row.expires_at.getTime() <= now) return 'expired';
    return {
      id: row.id,
      account: row.account_id,
      agent: row.agent_id,
      agentName: row.name,
      userMayApprove: row.user_may_approve,
      ...(row.expires_at !== null ? { expiresAt: row.expires_at.getTime() } : {}),
    };
  }
}
