import { Redis, ReplyError, type Command, type RedisOptions } from 'ioredis';

/**
 * Client options for a service whose requests need Redis and must not wait on its outage: a
 * command while the connection is down fails at once (no offline queue), one sent to a Redis
 * that stopped answering fails after `commandTimeout`, and a command is never re-sent across
 * reconnects more than once. Without them ioredis queues commands while it reconnects and
 * answers after its retries (about 20 s): the request fails late, and as an unknown error.
 * The client still reconnects by itself (its default back-off, at most 2 s apart).
 * {@link FailFastRedis}'s defaults; await its `connect()`: with no offline queue a command sent
 * before the first connection is ready fails.
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

/**
 * A command of a {@link FailFastRedis} got no answer from Redis: the client was not connected
 * (no offline queue), the connection closed under it, it timed out, or its retries were spent.
 * Nothing of it ran, or nothing is known of it. `cause` keeps the client's own error for the logs.
 */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';

  constructor(cause: unknown) {
    super('redis is unavailable: the command got no answer', { cause });
  }
}

/**
 * The error code of a reply error as Redis sends it, its first word (`OOM`, `WRONGTYPE`,
 * `NOSCRIPT`); undefined for anything that is not a reply of Redis's.
 */
export function replyCode(err: unknown): string | undefined {
  if (!(err instanceof ReplyError)) return undefined;
  const text = (err as Error).message;
  const end = text.indexOf(' ');
  return end === -1 ? text : text.slice(0, end);
}

/** The commands whose failures are already typed (a command is sent again across reconnects). */
const typedCommands = new WeakSet<Command>();

/**
 * A Redis client (connecting lazily: await `connect()`) whose commands fail typed: a reply error
 * stays the client's `ReplyError` (its code: {@link replyCode}); every other failure of a command
 * (ioredis says these in words only: not writeable, connection closed, timed out; or its abort
 * classes) becomes a {@link RedisUnavailableError}. A client in subscriber or monitor mode is not
 * one of these. `options` default to {@link REDIS_FAIL_FAST}.
 */
export class FailFastRedis extends Redis {
  constructor(url: string, options: Omit<RedisOptions, 'replyMapping'> = REDIS_FAIL_FAST) {
    super(url, { ...options, lazyConnect: true });
  }

  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    if (!typedCommands.has(command)) {
      typedCommands.add(command);
      const reject = command.reject;
      command.reject = (err: Error) => reject(err instanceof ReplyError ? err : new RedisUnavailableError(err));
    }
    return super.sendCommand(command, stream);
  }
}

/**
 * Whether `err` says Redis could not serve a command (as opposed to a reply error of a command
 * that ran): a {@link RedisUnavailableError} of a {@link FailFastRedis}, or a reply whose code is
 * `OOM`. Decided by class and reply code only.
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (err instanceof RedisUnavailableError) return true;
  // A full Redis (maxmemory reached, policy noeviction) refuses writes with the OOM error code
  // (a script's first write refused so reaches the caller with the same code, nothing of the
  // script written): it passes once memory is freed, so it is an outage, not a fault.
  return replyCode(err) === 'OOM';
}

/**
 * A connected Redis client for limits that must not queue behind an outage: commands fail within
 * a second, no offline queue, one attempt per request. A Redis that does not answer at start is
 * reported through `onUnavailable` and the client keeps reconnecting by itself; what uses it
 * decides how to fail meanwhile (the call limits and the failed-token limit admit).
 */
export async function connectLimitsRedis(url: string, onUnavailable: (err: Error) => void): Promise<FailFastRedis> {
  const redis = new FailFastRedis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1_000 });
  redis.on('error', () => {});
  await redis.connect().catch((err: unknown) => onUnavailable(err as Error));
  return redis;
}
