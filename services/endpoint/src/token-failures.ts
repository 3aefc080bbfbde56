import type { RateLimit, RateLimiter } from '@mcpx/shared-state';

/** Addresses one instance remembers as refused at once (the oldest forgotten past it). */
const MAX_BLOCKED = 100_000;

/**
 * The per-address limit on failed bearer-token attempts. Every failed attempt takes a token of
 * the address's bucket, shared by every instance through Redis (`RateLimiter`, kind
 * `endpoint-token-failures`); once a take is refused the address is refused on this instance, before
 * any token is looked at (a valid guess and a wrong one then get the same answer), until the
 * bucket would hold a token again. Requests with a good token cost nothing here: the limit is read
 * from memory and Redis is asked only on a failure. With n instances an address that is blocked
 * gets at most one more attempt per instance per refill. Redis down: the limiter admits (the
 * tokens are 256-bit random, the limit protects the token table, not the secrets).
 */
export class TokenFailures {
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly limit: RateLimit,
  ) {}

  /** How long `address` stays refused (ms), or undefined when it may try. */
  blocked(address: string): number | undefined {
    if (this.blockedUntil.size === 0) return undefined;
    const until = this.blockedUntil.get(address);
    if (until === undefined) return undefined;
    const left = until - Date.now();
    if (left > 0) return left;
    this.blockedUntil.delete(address);
    return undefined;
  }

  /** Counts a failed attempt of `address`; the delay when it is now over its limit. */
  async failed(address: string): Promise<number | undefined> {
    if (!(this.limit.ratePerSecond > 0)) return undefined;
    const decision = await this.limiter.take('endpoint-token-failures', address, this.limit);
    if (decision.ok) return undefined;
    this.blockedUntil.delete(address);
    this.blockedUntil.set(address, Date.now() + decision.retryAfterMs);
    if (this.blockedUntil.size > MAX_BLOCKED) this.blockedUntil.delete(this.blockedUntil.keys().next().value as string);
    return decision.retryAfterMs;
  }
}
