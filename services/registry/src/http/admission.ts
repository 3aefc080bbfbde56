import type { IncomingMessage } from 'node:http';
import type { Redis } from 'ioredis';
import type { Meter } from '@opentelemetry/api';
import { DEFAULT_QUOTAS, type QuotaSettings } from '@mcpx/config';
import { TrustedProxies } from '@mcpx/config/trusted-proxies';
import { LeaseQuota, RateLimiter } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import { AccountQuotas, QuotaKinds, quotaExceeded, rateLimited } from '../shared/quotas.js';
import { dependencyUnavailable } from './dependency-errors.js';

/** No proxy is trusted: the client's address is the socket's peer. */
const NO_TRUSTED_PROXIES = new TrustedProxies([]);

/** A full process says to come back after this long (streams end when their clients go). */
const PROCESS_STREAMS_RETRY_MS = 5_000;

export interface AdmissionDeps {
  redis: Redis;
  redisPrefix: string;
  log: Logger;
  meter: Meter;
  /** Quotas and rate limits (`config.quotas`; absent: the defaults). */
  quotas?: QuotaSettings;
  /** Whose `X-Forwarded-For` the per-address limit believes (`TRUSTED_PROXIES`; absent: nobody's). */
  trustedProxies?: TrustedProxies;
}

/**
 * The HTTP face's rate limits and stream quotas (Redis buckets and leases shared by every
 * instance), each refusal typed (`rate_limited`, `quota_exceeded`) and counted by kind. A limit
 * that cannot reach Redis refuses (fails closed): `unavailable` (dependency `redis`, retryable),
 * said in the log now and then. Admitting instead would let whoever can slow Redis past every
 * limit here; the request needs Redis anyway (its nonce).
 */
export class Admission {
  readonly limits: QuotaSettings;
  /** The per-account quotas the actions check, counting into the same rejection counter. */
  readonly quotas: AccountQuotas;
  private readonly rates: RateLimiter;
  private readonly streams: LeaseQuota;
  private readonly proxies: TrustedProxies;
  private lastLimitWarning = 0;
  /** Event streams this process holds (admitted, until released). */
  private streamsHere = 0;

  constructor(deps: AdmissionDeps) {
    this.limits = deps.quotas ?? DEFAULT_QUOTAS;
    this.quotas = new AccountQuotas(this.limits, deps.meter);
    this.proxies = deps.trustedProxies ?? NO_TRUSTED_PROXIES;
    const limitError = (err: Error): void => {
      // Said now and then, not per request.
      if (Date.now() - this.lastLimitWarning < 10_000) return;
      this.lastLimitWarning = Date.now();
      deps.log.warn('rate limits and stream quotas unavailable, refusing', { err });
    };
    this.rates = new RateLimiter(deps.redis, deps.redisPrefix, { onError: limitError, whenRedisFails: 'refuse' });
    this.streams = new LeaseQuota(deps.redis, deps.redisPrefix, { onError: limitError });
  }

  /** Refuses a client address over its rate before anything costly (decoding, signature, Redis nonce). */
  async address(req: IncomingMessage): Promise<void> {
    const decision = await typed(
      this.rates.take('address', this.proxies.clientAddress(req), this.limits.actionsPerAddress),
    );
    if (decision.ok) return;
    this.quotas.rejected(QuotaKinds.actionsPerAddress);
    throw rateLimited(
      QuotaKinds.actionsPerAddress,
      decision.retryAfterMs,
      'too many requests from this address; retry later',
    );
  }

  /** Refuses a signer over its rate, once its signature is known good (a forger cannot drain another's bucket). */
  async signer(signer: string): Promise<void> {
    const decision = await typed(this.rates.take('signer', signer, this.limits.actionsPerSigner));
    if (decision.ok) return;
    this.quotas.rejected(QuotaKinds.actionsPerSigner);
    throw rateLimited(
      QuotaKinds.actionsPerSigner,
      decision.retryAfterMs,
      'too many actions from this signer; retry later',
    );
  }

  /**
   * Holds one of this process's event-stream slots and one of the client address's (across
   * instances) while its stream is open: taken before the envelope is read, so a flood under
   * fresh keys (each one an account) costs no signature check past its address's bound.
   */
  async peer(req: IncomingMessage): Promise<() => void> {
    const maxHere = this.limits.eventStreamsPerProcess;
    if (maxHere > 0 && this.streamsHere >= maxHere) {
      this.quotas.rejected(QuotaKinds.eventStreamsPerProcess);
      throw rateLimited(
        QuotaKinds.eventStreamsPerProcess,
        PROCESS_STREAMS_RETRY_MS,
        `this registry instance holds its ${maxHere} open event streams; retry later`,
        maxHere,
      );
    }
    this.streamsHere++;
    let freed = false;
    const free = (): void => {
      if (!freed) this.streamsHere--;
      freed = true;
    };
    const max = this.limits.eventStreamsPerAddress;
    const decision = await typed(
      this.streams.acquire('event-streams-address', this.proxies.clientAddress(req), max),
    ).catch((err: unknown) => {
      free();
      throw err;
    });
    if (!decision.ok) {
      free();
      this.quotas.rejected(QuotaKinds.eventStreamsPerAddress);
      throw rateLimited(
        QuotaKinds.eventStreamsPerAddress,
        decision.retryAfterMs,
        `this address holds its ${max} open event streams; close one first`,
        max,
      );
    }
    return () => {
      free();
      decision.lease.release();
    };
  }

  /** Holds one of the account's event-stream slots while its stream is open. */
  async stream(account: string): Promise<() => void> {
    const max = this.limits.eventStreamsPerAccount;
    const decision = await typed(this.streams.acquire('event-streams', account, max));
    if (decision.ok) return () => decision.lease.release();
    this.quotas.rejected(QuotaKinds.eventStreams);
    throw quotaExceeded(
      'envelope',
      QuotaKinds.eventStreams,
      max,
      `the account holds its ${max} open event streams; close one first`,
      decision.retryAfterMs,
    );
  }
}

/** A limit's Redis outage as the typed `unavailable` (the event stream answers wire errors only); a fault stays as it is. */
async function typed<T>(decision: Promise<T>): Promise<T> {
  try {
    return await decision;
  } catch (err) {
    throw dependencyUnavailable(err) ?? err;
  }
}
