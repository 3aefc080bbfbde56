import { Redis, type RedisOptions } from 'ioredis';

/**
 * Client options for a service whose requests need Redis and must not wait on its outage: a
 * command while the connection is down fails at once (no offline queue), one sent to a Redis
 * that stopped answering fails after `commandTimeout`, and a command is never re-sent across
 * reconnects more than once. Without them ioredis queues commands while it reconnects and
 * answers after its retries (about 20 s): the request fails late, and as an unknown error.
 * The client still reconnects by itself (its default back-off, at most 2 s apart).
 * Create the client with `lazyConnect: true` and await `connect()`: with no offline queue a
 * command sent before the first connection is ready fails.
 */
export const REDIS_FAIL_FAST = {
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  // Generous beside Redis's sub-millisecond answers: a loaded event loop must not read as an outage.
  commandTimeout: 2_000,
  connectTimeout: 2_000,
} as const satisfies RedisOptions;

/** What a request refused for a Redis outage tells its caller to wait (the reconnect's pace). */
export const REDIS_RETRY_AFTER_MS = 1_000;

/** The messages (and names) of the errors ioredis raises when it cannot run a command now. */
const UNAVAILABLE_MESSAGES = [
  "Stream isn't writeable and enableOfflineQueue options is false",
  'Connection is closed.',
  'Command timed out',
];

/**
 * A reply whose error code (its first word, as Redis sends it) is `OOM`: the write was refused
 * because Redis is at its `maxmemory`. A script's first write refused so reaches the caller with
 * the same code (and nothing of the script was written).
 */
export function isOutOfMemory(err: Error): boolean {
  return err.message.startsWith('OOM ');
}

/**
 * Whether `err` says Redis could not be reached (as opposed to a reply error of a command that
 * ran): the offline queue is off, the connection is closed, the command timed out, or its retries
 * are spent. `status` (the client's, when known) counts a plain error raised while the client is
 * not ready as the outage too.
 */
export function isRedisUnavailable(err: unknown, status?: string): boolean {
  if (!(err instanceof Error)) return false;
  // A full Redis (maxmemory reached, policy noeviction) refuses writes with the OOM error code:
  // nothing was written and it passes once memory is freed, so it is an outage, not a fault.
  if (err.name === 'ReplyError') return isOutOfMemory(err);
  if (err.name === 'MaxRetriesPerRequestError') return true;
  if (UNAVAILABLE_MESSAGES.some((m) => err.message.startsWith(m))) return true;
  return status !== undefined && status !== 'ready' && err.constructor === Error;
}

/**
 * A connected Redis client for limits that must not queue behind an outage: commands fail within
 * a second, no offline queue, one attempt per request. A Redis that does not answer at start is
 * reported through `onUnavailable` and the client keeps reconnecting by itself; what uses it
 * decides how to fail meanwhile (the call limits and the failed-token limit admit).
 */
export async function connectLimitsRedis(url: string, onUnavailable: (err: Error) => void): Promise<Redis> {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: 1_000,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  await redis.connect().catch((err: unknown) => onUnavailable(err as Error));
  return redis;
}
