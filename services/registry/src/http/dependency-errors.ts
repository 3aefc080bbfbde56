import { ErrorCodes, WireError } from '@mcpx/contracts';
import { isPostgresUnavailable } from '@mcpx/db';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS } from '@mcpx/shared-state';

/** What an action refused for a Postgres outage tells its caller to wait (the pool reconnects per request). */
export const POSTGRES_RETRY_AFTER_MS = 1_000;

/**
 * The typed `unavailable` error for a failure that is a store's outage rather than a fault of the
 * action: the dependency named, when to retry, never its address or the driver's message.
 * Undefined for anything else (a wire error stays as it is; an unknown fault stays `internal`).
 */
export function dependencyUnavailable(err: unknown): WireError<'unavailable'> | undefined {
  if (err instanceof WireError || !(err instanceof Error)) return undefined;
  if (isRedisUnavailable(err)) {
    return new WireError(ErrorCodes.unavailable, 'redis is unavailable: the action was not run', {
      dependency: 'redis',
      retryAfterMs: REDIS_RETRY_AFTER_MS,
    });
  }
  if (isPostgresUnavailable(err)) {
    return new WireError(
      ErrorCodes.unavailable,
      'postgres is unavailable: the action was not run (nothing was written)',
      { dependency: 'postgres', retryAfterMs: POSTGRES_RETRY_AFTER_MS },
    );
  }
  return undefined;
}
