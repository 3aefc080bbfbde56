import { accessTokenHash } from '@mcpx/contracts';
import { describe, expect, it } from 'vitest';
import { compareAndRefresh, type CompareAndRefresh, type RefreshOutcome } from './compare-and-refresh.js';

/**
 * The decision rule of every renewal against an in-memory store and lock (pure logic: the real
 * Redis lock and Postgres rows are exercised by test/oauth and test/auth-methods).
 */
interface Stored {
  access: string;
  refresh?: string;
}

function harness(initial: Stored | undefined, opts: Partial<CompareAndRefresh<Stored>> & { follower?: boolean } = {}) {
  let stored = initial;
  let exchanges = 0;
  const c = (stale: string | undefined): CompareAndRefresh<Stored> => ({
    // The lead runs, or (as a follower of a holder that just finished) the follow.
    lock: (lead, follow) => (opts.follower === true ? follow() : lead()),
    read: () => Promise.resolve(stored),
    accessToken: (s) => s.access,
    staleTokenHash: stale,
    anyTokenWillDo: false,
    followerTakesAny: false,
    whenNone: 'gone',
    refresh: (s): Promise<RefreshOutcome> => {
      exchanges++;
      if (s?.refresh === undefined) return Promise.resolve('refused');
      stored = { access: `${s.access}+`, refresh: s.refresh };
      return Promise.resolve('refreshed');
    },
    retry: () => new Error('retry'),
    ...opts,
  });
  return {
    run: (stale: string | undefined) => compareAndRefresh(c(stale)),
    exchanges: () => exchanges,
    stored: () => stored,
  };
}

describe('compare-and-refresh', () => {
  it('refreshes only the token the caller holds; a caller that lost the race gets current, with no second exchange', async () => {
    const h = harness({ access: 'a', refresh: 'r' });
    expect(await h.run(accessTokenHash('a'))).toBe('refreshed');
    expect(h.stored()?.access).toBe('a+');
    expect(await h.run(accessTokenHash('a'))).toBe('current');
    expect(h.exchanges()).toBe(1);
  });

  it('nothing stored is gone, or a first token is obtained', async () => {
    expect(await harness(undefined).run(undefined)).toBe('gone');
    const obtain = harness(undefined, { whenNone: 'obtain', refresh: () => Promise.resolve('refreshed') });
    expect(await obtain.run(undefined)).toBe('refreshed');
  });

  it('with no stale hash: refreshes whatever is stored, or takes any token when any will do', async () => {
    expect(await harness({ access: 'a', refresh: 'r' }).run(undefined)).toBe('refreshed');
    const any = harness({ access: 'a' }, { anyTokenWillDo: true });
    expect(await any.run(undefined)).toBe('current');
    expect(any.exchanges()).toBe(0);
  });

  it('a follower takes a moved token, says refused when the refresh token was forgotten, and otherwise asks to retry', async () => {
    expect(await harness({ access: 'b' }, { follower: true }).run(accessTokenHash('a'))).toBe('current');
    expect(
      await harness({ access: 'a' }, { follower: true, refusedIf: (s) => s.refresh === undefined }).run(
        accessTokenHash('a'),
      ),
    ).toBe('refused');
    await expect(harness({ access: 'a', refresh: 'r' }, { follower: true }).run(accessTokenHash('a'))).rejects.toThrow(
      'retry',
    );
    expect(await harness(undefined, { follower: true }).run(accessTokenHash('a'))).toBe('gone');
    await expect(harness(undefined, { follower: true, whenNone: 'obtain' }).run(undefined)).rejects.toThrow('retry');
    expect(await harness({ access: 'a' }, { follower: true, followerTakesAny: true }).run(undefined)).toBe('current');
  });
});
