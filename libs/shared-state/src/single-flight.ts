import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { UntilAnswered } from './until-answered.js';

/** Deletes the lock only when it still holds our token (a lock that expired is someone else's). */
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** Extends the lock only while it still holds our token. */
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

/**
 * Runs `fn` while holding `lockKey` (already taken with `token`): the lock is renewed every third of
 * its TTL while `fn` runs, so slow work keeps it (a crashed holder still frees it within the TTL),
 * and released at the end; a release that gets no answer is handed to `letGo`.
 */
async function holding<T>(
  redis: Redis,
  lock: { key: string; token: string; ttlMs: number },
  letGo: (lockKey: string, token: string) => void,
  fn: () => Promise<T>,
): Promise<T> {
  const { key, token, ttlMs } = lock;
  const renew = setInterval(
    () => void redis.eval(RENEW, 1, key, token, String(ttlMs)).catch(() => undefined),
    Math.max(1, Math.floor(ttlMs / 3)),
  );
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await redis.eval(RELEASE, 1, key, token).catch(() => letGo(key, token));
  }
}

/** The lock of an {@link SingleFlight.exclusive} run stayed held longer than its wait. */
export class LockBusyError extends Error {
  override readonly name = 'LockBusyError';
  constructor(readonly key: string) {
    super('another exchange holds the lock; try again');
  }
}

export interface SingleFlightOptions {
  /** How long a holder may keep the lock before it expires (a crashed holder frees it). */
  ttlMs: number;
  /**
   * How long a follower waits for the holder (default `ttlMs`); then it runs `follow` anyway,
   * never `lead`. The holder renews the lock while it works, so `ttlMs` bounds only how long a
   * crashed holder blocks others.
   */
  waitMs?: number;
  pollMs?: number;
}

/**
 * Collapses concurrent runs of the same work: within a process through a shared promise, and
 * across processes through a Redis lock. A follower that finds the lock held waits for the holder
 * to finish and then runs `follow` (which reads the holder's result) instead of `lead`.
 */
export class SingleFlight {
  private readonly inflight = new Map<string, Promise<unknown>>();
  /**
   * Locks this process let go of that Redis has not yet confirmed free: a lock request that got no
   * answer (its caller gave up, yet it may still take the lock) and a holder's release that got no
   * answer. Each is released (compare-and-delete of its token) until Redis answers, so none holds
   * after Redis returns until its expiry (up to a minute of stalled work).
   */
  private readonly letGone = new UntilAnswered();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async run<T>(key: string, opts: SingleFlightOptions, lead: () => Promise<T>, follow: () => Promise<T>): Promise<T> {
    const existing = this.inflight.get(key) as Promise<T> | undefined;
    if (existing) return existing;
    const p = this.acquireAndRun(key, opts, lead, follow).finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  /**
   * Runs `fn` holding the same lock {@link run} takes for `key`, after waiting for any holder
   * (within `waitMs`, default `ttlMs`): work that must not interleave with the collapsed runs but
   * is never collapsed itself (it has inputs of its own). Throws {@link LockBusyError} when the
   * lock stays held past the wait.
   */
  async exclusive<T>(key: string, opts: SingleFlightOptions, fn: () => Promise<T>): Promise<T> {
    const lockKey = `${this.prefix}lock:${key}`;
    const token = randomBytes(12).toString('base64url');
    const deadline = Date.now() + (opts.waitMs ?? opts.ttlMs);
    const poll = opts.pollMs ?? 50;
    while ((await this.take(lockKey, token, opts.ttlMs)) !== 'OK') {
      if (Date.now() >= deadline) throw new LockBusyError(key);
      await new Promise((r) => setTimeout(r, poll));
    }
    return holding(this.redis, { key: lockKey, token, ttlMs: opts.ttlMs }, this.letGo, fn);
  }

  private async acquireAndRun<T>(
    key: string,
    opts: SingleFlightOptions,
    lead: () => Promise<T>,
    follow: () => Promise<T>,
  ): Promise<T> {
    const lockKey = `${this.prefix}lock:${key}`;
    const token = randomBytes(12).toString('base64url');
    const got = await this.take(lockKey, token, opts.ttlMs);
    if (got === 'OK') return holding(this.redis, { key: lockKey, token, ttlMs: opts.ttlMs }, this.letGo, lead);
    const deadline = Date.now() + (opts.waitMs ?? opts.ttlMs);
    const poll = opts.pollMs ?? 50;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, poll));
      if ((await this.redis.exists(lockKey)) === 0) return follow();
    }
    return follow();
  }

  /** Asks for the lock; a request that gets no answer is let go of (it may take the lock later) and thrown on. */
  private async take(lockKey: string, token: string, ttlMs: number): Promise<string | null> {
    try {
      return await this.redis.set(lockKey, token, 'PX', ttlMs, 'NX');
    } catch (err) {
      this.letGo(lockKey, token);
      throw err;
    }
  }

  /** Releases `token`'s lock once Redis answers (see {@link letGone}). */
  private readonly letGo = (lockKey: string, token: string): void =>
    this.letGone.add(token, () => this.redis.eval(RELEASE, 1, lockKey, token));
}
