import { accessTokenHash } from '@mcpx/contracts';

/**
 * The one outcome vocabulary of a token renewal: `refreshed` (this call stored a new token),
 * `current` (the stored token is no longer the stale one: someone renewed it, or the owner gave a
 * new one), `refused` (it cannot be renewed: no refresh token, or the authorization server refused
 * it; the owner acts), `gone` (nothing is stored to renew).
 */
export type RefreshOutcome = 'refreshed' | 'current' | 'refused' | 'gone';

export interface CompareAndRefresh<S> {
  /** Runs `lead` under the credential's lock across instances (Redis single flight), else `follow` once the holder is done. */
  lock(lead: () => Promise<RefreshOutcome>, follow: () => Promise<RefreshOutcome>): Promise<RefreshOutcome>;
  /** The stored credential (undefined: none). */
  read(): Promise<S | undefined>;
  /** Its access token, whose hash is compared with the caller's. */
  accessToken(stored: S): string;
  /** Hex SHA-256 of the token the caller holds (absent: it holds none, see {@link anyTokenWillDo}). */
  staleTokenHash: string | undefined;
  /** With no stale hash: whether any stored token will do (a token is got, not refreshed), or whatever is stored is refreshed. */
  anyTokenWillDo: boolean;
  /** With no stale hash, a follower takes whatever the holder left (true), or cannot tell it from the stale one (false: it throws {@link retry}). */
  followerTakesAny: boolean;
  /** Nothing stored: `gone`, or `obtain` (a client credentials token is got without any stored). */
  whenNone: 'gone' | 'obtain';
  /** The lead's exchange, run only while the stored credential is the stale one (or none, with `obtain`). */
  refresh(stored: S | undefined): Promise<RefreshOutcome>;
  /** A follower that finds the stale credential still stored: `refused` when it can no longer be renewed (its refresh token was forgotten). */
  refusedIf?(stored: S): boolean;
  /** The retryable error of a follower whose holder failed otherwise (the stale credential is still stored). */
  retry(): Error;
}

/**
 * Compare-and-refresh under a lock, written once for every renewable credential (an OAuth server's
 * tokens by refresh token or by client credentials, a vendor connection's): the credential is
 * renewed only while the stored access token is still the one the caller found stale, so a
 * rotating refresh token is presented once whoever (proxies, registries) needs a fresh token at the
 * same moment; a caller that lost the race gets `current` and reads what the winner stored.
 */
export async function compareAndRefresh<S>(c: CompareAndRefresh<S>): Promise<RefreshOutcome> {
  const stale = c.staleTokenHash;
  const moved = (stored: S): boolean => stale !== undefined && accessTokenHash(c.accessToken(stored)) !== stale;
  const lead = async (): Promise<RefreshOutcome> => {
    const stored = await c.read();
    if (stored === undefined) return c.whenNone === 'gone' ? 'gone' : c.refresh(undefined);
    if (moved(stored) || (stale === undefined && c.anyTokenWillDo)) return 'current';
    return c.refresh(stored);
  };
  // The holder is done: its token is ours; one it could no longer renew is refused; a holder that
  // failed otherwise left the stale one (retryable).
  const follow = async (): Promise<RefreshOutcome> => {
    const stored = await c.read();
    if (stored === undefined) {
      if (c.whenNone === 'gone') return 'gone';
      throw c.retry();
    }
    if (moved(stored) || (stale === undefined && c.followerTakesAny)) return 'current';
    if (c.refusedIf?.(stored) === true) return 'refused';
    throw c.retry();
  };
  return c.lock(lead, follow);
}
