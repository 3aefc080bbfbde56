import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import pg from 'pg';

/** SQLSTATE classes and codes of a connection lost or refused (not of a statement that failed). */
const CONNECTION_SQLSTATE = /^(08|57P0[1-3])/;

/**
 * Postgres could not serve a statement: the pool could not open a connection (refused, timed
 * out, the server starting or shutting down), or the connection lent for it was already lost (the
 * server restarted, an admin terminated it, the socket broke). Nothing of the statement ran. Made
 * by the pool `createDb` gives Kysely, where the driver's untyped errors are known to be the
 * connection's; `cause` keeps the driver's error for the logs.
 */
export class PostgresUnavailableError extends Error {
  override readonly name = 'PostgresUnavailableError';

  constructor(cause: unknown) {
    super('postgres is unavailable', { cause });
  }
}

/**
 * Whether a store failure is Postgres out of reach rather than the statement's fault: a
 * {@link PostgresUnavailableError}, or a server error whose SQLSTATE is a connection's (class 08,
 * 57P01–57P03: shut down, terminated, cannot connect now). Decided by class and SQLSTATE only.
 */
export function isPostgresUnavailable(err: unknown): boolean {
  if (err instanceof PostgresUnavailableError) return true;
  return err instanceof pg.DatabaseError && CONNECTION_SQLSTATE.test(err.code ?? '');
}

/** A failure to open a connection, typed: a server error keeps its SQLSTATE unless it is a connection's. */
function connectFailure(err: unknown): Error {
  return err instanceof pg.DatabaseError && !isPostgresUnavailable(err) ? err : new PostgresUnavailableError(err);
}

/**
 * The pool as Kysely sees it, with typed failures: a connection that cannot be opened rejects
 * with {@link PostgresUnavailableError}; so does a statement on a lent connection that was already
 * lost (`lost` holds the clients that emitted 'error'), when the driver says it without a
 * SQLSTATE ("Connection terminated unexpectedly", "not queryable"). A server's error (a
 * constraint, a serialization failure) keeps its SQLSTATE as the driver gives it.
 */
export function typedPool(pool: pg.Pool, lost: WeakSet<object>): PostgresPool {
  const lent = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    const known = lent.get(client);
    if (known !== undefined) return known;
    function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
    function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
    function query(sqlOrCursor: string | PostgresCursor<unknown>, parameters?: ReadonlyArray<unknown>): unknown {
      // A cursor (streaming) answers for itself; the services do not stream.
      if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor as unknown as pg.Submittable);
      return client.query(sqlOrCursor, parameters as unknown[]).catch((err: unknown) => {
        throw lost.has(client) && !(err instanceof pg.DatabaseError) ? new PostgresUnavailableError(err) : err;
      });
    }
    const typed: PostgresPoolClient = {
      get processID(): number | undefined {
        return (client as { processID?: number }).processID;
      },
      query,
      release: (destroy?: boolean) => client.release(destroy),
    };
    lent.set(client, typed);
    return typed;
  };
  return {
    Client: pg.Client,
    options: pool.options,
    connect: async () => {
      try {
        return wrap(await pool.connect());
      } catch (err) {
        throw connectFailure(err);
      }
    },
    end: () => pool.end(),
  };
}
