import { ErrorCodes, WireError } from '@mcpx/contracts';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS } from '@mcpx/shared-state';

/** What an action refused for a Postgres outage tells its caller to wait (the pool reconnects per request). */
export const POSTGRES_RETRY_AFTER_MS = 1_000;

/** SQLSTATE classes and codes of a connection lost or refused (not of a statement that failed). */
const PG_LOST = /^(08|57P0[1-3])/;
/** The messages of node-postgres when it has no connection to offer. */
const PG_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
  'Client was closed and is not queryable',
];

function isPostgresUnavailable(err: Error, postgresPort: number | undefined): boolean {
  const e = err as Error & { code?: unknown; port?: unknown; syscall?: unknown };
  if (typeof e.code === 'string' && PG_LOST.test(e.code) && 'severity' in e) return true;
  if (PG_MESSAGES.some((m) => err.message.startsWith(m))) return true;
  // The pool's connect refused (the server is down): the socket error names the database's port.
  return (
    e.syscall === 'connect' &&
    (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') &&
    postgresPort !== undefined &&
    e.port === postgresPort
  );
}

/**
 * The typed `unavailable` error for a failure that is a store's outage rather than a fault of the
 * action: the dependency named, when to retry, never its address or the driver's message.
 * Undefined for anything else (a wire error stays as it is; an unknown fault stays `internal`).
 */
export function dependencyUnavailable(
  err: unknown,
  deps: { redisStatus?: string; postgresPort?: number },
): WireError<'unavailable'> | undefined {
  if (err instanceof WireError || !(err instanceof Error)) return undefined;
  if (isRedisUnavailable(err, deps.redisStatus)) {
    return new WireError(ErrorCodes.unavailable, 'redis is unavailable: the action was not run', {
      dependency: 'redis',
      retryAfterMs: REDIS_RETRY_AFTER_MS,
    });
  }
  if (isPostgresUnavailable(err, deps.postgresPort)) {
    return new WireError(
      ErrorCodes.unavailable,
      'postgres is unavailable: the action was not run (nothing was written)',
      { dependency: 'postgres', retryAfterMs: POSTGRES_RETRY_AFTER_MS },
    );
  }
  return undefined;
}

/** The port of a Postgres URL (5432 when it names none). */
export function postgresPortOf(url: string): number | undefined {
  try {
    const u = new URL(url);
    return u.port === '' ? 5432 : Number(u.port);
  } catch {
    return undefined;
  }
}
