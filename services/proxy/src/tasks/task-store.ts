import { sql, type Selectable } from 'kysely';
import { TASK_LIST_MAX, type TaskState } from '@mcpx/contracts';
import type { Db, TasksTable } from '@mcpx/db';
import { TASKS_CHANNEL, TaskNotices } from './task-notices.js';

export { isOpen, newTaskId, taskView } from './task-rows.js';

export type TaskRow = Selectable<TasksTable>;

/** A new task's row, written before its handle goes back to anyone. */
export interface NewTask {
  id: string;
  account: string;
  agent: string;
  run: string;
  server: string;
  tool: string;
  remoteName: string;
  upstreamTaskId: string;
  dialect: string;
  protocolVersion: string;
  sessionId?: string;
  authContext: string;
  /** What the call declared it answers: its task's questions of those kinds go to the caller, the rest to a person. */
  answerers?: TaskAnswerers;
  state: TaskState;
  statusMessage?: string;
  pollIntervalMs: number;
  ttlMs: number;
  /** The creating instance: it polls first (its lease starts with the row). */
  owner: string;
  leaseMs: number;
}

/** Who answers a task's questions besides a person: the call's `answers`, and its agent's `inputs.forms: "runtime"`. */
export interface TaskAnswerers {
  forms?: boolean;
  sampling?: boolean;
  roots?: boolean;
  formsByRuntime?: boolean;
}

/** A row's answerers (none: a person answers every question). */
export function answerersOf(row: TaskRow): TaskAnswerers {
  if (row.answerers === null) return {};
  try {
    return JSON.parse(row.answerers) as TaskAnswerers;
  } catch {
    return {};
  }
}

/**
 * The proxy's tasks (`proxy.tasks`): thin queries, every one naming its account or the lease
 * holder. The lease lives in the row: an instance claims due tasks with `FOR UPDATE SKIP LOCKED`
 * (two instances never claim one task), the claim itself moving the task's next poll on and holding
 * the lease past it (the poller keeps its tasks while it keeps up; a dead one's lapse), and every write
 * of a poll's outcome is fenced by `lease_owner`, so an instance that lost its lease (it stalled
 * past it) cannot overwrite what the new holder found.
 */
export class TaskStore {
  /** Statements sent (`/stats`' `taskStatements`: an idle proxy sends none while no task is due). */
  statements = 0;

  constructor(private readonly db: Db) {}

  /** Writes a new task's row and answers it as written. Its lease holds until its first poll is due and `leaseMs` more. */
  async create(t: NewTask): Promise<TaskRow> {
    this.statements++;
    const now = Date.now();
    return await this.db
      .insertInto('proxy.tasks')
      .values({
        id: t.id,
        account_id: t.account,
        agent_id: t.agent,
        run: t.run,
        server: t.server,
        tool: t.tool,
        remote_name: t.remoteName,
        upstream_task_id: t.upstreamTaskId,
        dialect: t.dialect,
        protocol_version: t.protocolVersion,
        session_id: t.sessionId ?? null,
        auth_context: t.authContext,
        answerers: t.answerers === undefined ? null : JSON.stringify(t.answerers),
        state: t.state,
        status_message: t.statusMessage ?? null,
        poll_interval_ms: t.pollIntervalMs,
        next_poll_at: new Date(now + t.pollIntervalMs),
        expires_at: new Date(now + t.ttlMs),
        lease_owner: t.owner,
        lease_until: new Date(now + t.pollIntervalMs + t.leaseMs),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Open tasks of the account (the running-tasks quota counts them). */
  async countOpen(account: string): Promise<number> {
    this.statements++;
    const row = await this.db
      .selectFrom('proxy.tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', account)
      .where('finished_at', 'is', null)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /**
   * Claims up to `limit` open tasks due for a poll whose lease is this instance's, free or lapsed
   * (this instance's own first: a task stays with its poller while it keeps up), in one statement.
   * The claim puts the task's next poll its interval (jittered ±10 %) and `flightMs` (the longest
   * its `tasks/get` may take) away, and holds the lease until then and `leaseMs` more: no other
   * instance polls the task sooner, even if this one dies with its request in flight. The poll,
   * once answered, sets the next one from its answer's time.
   */
  async claimDue(owner: string, leaseMs: number, limit: number, flightMs: number): Promise<TaskRow[]> {
    this.statements++;
    const result = await sql<TaskRow>`
      WITH due AS (
        SELECT id, poll_interval_ms * (0.9 + random() * 0.2) + ${flightMs}::float8 AS wait_ms
        FROM proxy.tasks
        WHERE finished_at IS NULL AND next_poll_at <= now()
          AND (lease_owner = ${owner} OR lease_until IS NULL OR lease_until < now())
        ORDER BY lease_owner IS NOT DISTINCT FROM ${owner} DESC, next_poll_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED),
      slot AS (SELECT id, now() + make_interval(secs => wait_ms / 1000) AS at FROM due)
      UPDATE proxy.tasks t SET lease_owner = ${owner}, next_poll_at = slot.at,
        lease_until = slot.at + make_interval(secs => ${leaseMs / 1000})
      FROM slot WHERE t.id = slot.id
      RETURNING t.*`.execute(this.db);
    return result.rows;
  }

  /**
   * When the poll loop of `owner` next has something to do, in ms from the database's now (one
   * statement over the open tasks, `tasks_due`'s rows): the earliest time a claim by `owner` can
   * find a task (its next poll, and for a task another instance holds, its lease's end: it is
   * claimable only once that lapses) and the earliest end of an open task's ttl. Null: none.
   */
  async nextDue(owner: string): Promise<{ pollInMs: number | null; expireInMs: number | null }> {
    const result = await sql<{ poll_in_ms: number | null; expire_in_ms: number | null }>`
      SELECT
        extract(epoch FROM min(CASE WHEN lease_owner = ${owner} OR lease_until IS NULL THEN next_poll_at
          ELSE GREATEST(next_poll_at, lease_until) END) - now()) * 1000 AS poll_in_ms,
        extract(epoch FROM min(expires_at) - now()) * 1000 AS expire_in_ms
      FROM proxy.tasks WHERE finished_at IS NULL`.execute(this.db);
    const row = result.rows[0];
    const ms = (v: number | string | null | undefined): number | null =>
      v === null || v === undefined ? null : Number(v);
    return { pollInMs: ms(row?.poll_in_ms), expireInMs: ms(row?.expire_in_ms) };
  }

  /**
   * Renews the claims of polls still waiting for their `tasks/get`, in one statement: each task's
   * next poll at least its interval less its jitter (−10 %) and `flightMs` from now, its lease past
   * that by `leaseMs`. Fenced by the lease holder; a poll's answer sets its next poll afterwards.
   */
  async renew(owner: string, leaseMs: number, ids: string[], flightMs: number): Promise<number> {
    this.statements++;
    if (ids.length === 0) return 0;
    const r = await sql`
      UPDATE proxy.tasks t SET
        next_poll_at = GREATEST(t.next_poll_at, now() + make_interval(secs => (t.poll_interval_ms * 0.9 + ${flightMs}::float8) / 1000)),
        lease_until = GREATEST(t.lease_until, now() + make_interval(secs => (t.poll_interval_ms * 0.9 + ${flightMs + leaseMs}::float8) / 1000))
      WHERE t.id = ANY(${ids}::text[]) AND t.lease_owner = ${owner} AND t.finished_at IS NULL`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }

  /**
   * The tick's polls that changed nothing, in one statement: each counted, its next poll set (its
   * interval from the answer's time; a failed poll's backoff), its lease held until then and
   * `leaseMs` more. Fenced by the lease holder. Returns how many were written.
   */
  async pollsDone(owner: string, leaseMs: number, done: { id: string; next: Date }[]): Promise<number> {
    this.statements++;
    if (done.length === 0) return 0;
    const ids = done.map((d) => d.id);
    const nexts = done.map((d) => d.next.toISOString());
    const r = await sql`
      UPDATE proxy.tasks t SET polls = t.polls + 1, updated_at = now(),
        next_poll_at = v.next,
        lease_until = GREATEST(t.lease_until, v.next + make_interval(secs => ${leaseMs / 1000}))
      FROM unnest(${ids}::text[], ${nexts}::timestamptz[]) AS v(id, next)
      WHERE t.id = v.id AND t.lease_owner = ${owner} AND t.finished_at IS NULL`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }

  /** Records a poll's outcome (still open) and when to poll next; false when the lease is no longer this instance's. */
  async polled(
    id: string,
    owner: string,
    next: {
      state: TaskState;
      statusMessage: string | null;
      pollIntervalMs: number;
      nextPollAt: Date;
      inputRequestId?: string | null;
      /** The lease then holds until the next poll is due and this much more. */
      leaseMs?: number;
    },
  ): Promise<boolean> {
    this.statements++;
    const r = await this.db
      .updateTable('proxy.tasks')
      .set({
        state: next.state,
        status_message: next.statusMessage,
        poll_interval_ms: next.pollIntervalMs,
        next_poll_at: next.nextPollAt,
        ...(next.leaseMs !== undefined ? { lease_until: new Date(next.nextPollAt.getTime() + next.leaseMs) } : {}),
        updated_at: new Date(),
        polls: sql`polls + 1`,
        ...(next.inputRequestId !== undefined ? { input_request_id: next.inputRequestId } : {}),
      })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('finished_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * Ends a task (once: a finished row is never written again). `owner` fences a poller's write;
   * null lets any instance end it (a cancel, an expiry). Returns the row as ended, or null when it
   * had ended already (or the lease was lost).
   */
  async finish(
    id: string,
    owner: string | null,
    end: {
      state: TaskState;
      statusMessage?: string | null;
      result?: Uint8Array;
      error?: { code: string; message: string };
    },
  ): Promise<TaskRow | null> {
    this.statements++;
    let q = this.db
      .updateTable('proxy.tasks')
      .set({
        state: end.state,
        ...(end.statusMessage !== undefined ? { status_message: end.statusMessage } : {}),
        result_cbor: end.result ?? null,
        error_code: end.error?.code ?? null,
        error_message: end.error?.message ?? null,
        finished_at: new Date(),
        updated_at: new Date(),
        lease_owner: null,
        lease_until: null,
      })
      .where('id', '=', id)
      .where('finished_at', 'is', null);
    if (owner !== null) q = q.where('lease_owner', '=', owner);
    return (await q.returningAll().executeTakeFirst()) ?? null;
  }

  async get(account: string, id: string): Promise<TaskRow | null> {
    this.statements++;
    return (
      (await this.db
        .selectFrom('proxy.tasks')
        .selectAll()
        .where('account_id', '=', account)
        .where('id', '=', id)
        .executeTakeFirst()) ?? null
    );
  }

  /** Which of these tasks are still open (a finished or purged one is not answered). */
  async openOf(ids: string[]): Promise<string[]> {
    this.statements++;
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('proxy.tasks')
      .select('id')
      .where('id', 'in', ids)
      .where('finished_at', 'is', null)
      .execute();
    return rows.map((r) => r.id);
  }

  /** The account's tasks (one agent's, when named), newest first. */
  async list(account: string, agent: string | undefined, limit: number): Promise<TaskRow[]> {
    this.statements++;
    let q = this.db.selectFrom('proxy.tasks').selectAll().where('account_id', '=', account);
    if (agent !== undefined) q = q.where('agent_id', '=', agent);
    return await q.orderBy('created_at', 'desc').limit(Math.min(limit, TASK_LIST_MAX)).execute();
  }

  /** Names the input request a task's open question waits on (null: answered), fenced by the lease holder. */
  async asked(id: string, owner: string, inputRequestId: string | null): Promise<boolean> {
    this.statements++;
    const r = await this.db
      .updateTable('proxy.tasks')
      .set({ input_request_id: inputRequestId, updated_at: new Date() })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('finished_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * Gives up this instance's leases (a graceful stop), but those of tasks still being polled
   * (`busy`): another instance claims the rest at its next tick instead of waiting for them to lapse.
   */
  async release(owner: string, busy: string[]): Promise<number> {
    this.statements++;
    let q = this.db
      .updateTable('proxy.tasks')
      .set({ lease_owner: null, lease_until: null })
      .where('lease_owner', '=', owner)
      .where('finished_at', 'is', null);
    if (busy.length > 0) q = q.where('id', 'not in', busy);
    const r = await q.executeTakeFirst();
    const n = Number(r.numUpdatedRows);
    if (n > 0) await this.notify(TaskNotices.freed);
    return n;
  }

  /** A notice on {@link TASKS_CHANNEL} to every instance listening (delivered once this statement commits). */
  async notify(payload: string): Promise<void> {
    this.statements++;
    await sql`SELECT pg_notify(${TASKS_CHANNEL}, ${payload})`.execute(this.db);
  }

  /** A task's row once it has ended (any account: the id is the connector's own, from a notice); null while it is open. */
  async endedRow(id: string): Promise<TaskRow | null> {
    this.statements++;
    return (
      (await this.db
        .selectFrom('proxy.tasks')
        .selectAll()
        .where('id', '=', id)
        .where('finished_at', 'is not', null)
        .executeTakeFirst()) ?? null
    );
  }

  /** Marks the result taken (the first time); the result stays until the task's ttl ends. */
  async taken(account: string, id: string): Promise<void> {
    this.statements++;
    await this.db
      .updateTable('proxy.tasks')
      .set({ taken_at: new Date() })
      .where('account_id', '=', account)
      .where('id', '=', id)
      .where('taken_at', 'is', null)
      .execute();
  }

  /** Open tasks past their ttl, claimed for expiry by this instance (at most `limit`). */
  async expiring(limit: number): Promise<TaskRow[]> {
    this.statements++;
    return await this.db
      .selectFrom('proxy.tasks')
      .selectAll()
      .where('finished_at', 'is', null)
      .where('expires_at', '<=', new Date())
      .limit(limit)
      .execute();
  }

  /**
   * A finished task's result goes when its ttl ends (taken or not; a task that ended in error
   * keeps its short typed error); its row stays an hour more, so its end can still be read.
   */
  async purge(limit: number): Promise<number> {
    this.statements++;
    await sql`UPDATE proxy.tasks SET result_cbor = NULL WHERE id IN (
      SELECT id FROM proxy.tasks WHERE finished_at IS NOT NULL AND expires_at <= now() AND state = 'completed' AND result_cbor IS NOT NULL LIMIT ${limit})`.execute(
      this.db,
    );
    this.statements++;
    const r = await sql`DELETE FROM proxy.tasks WHERE id IN (
      SELECT id FROM proxy.tasks WHERE finished_at IS NOT NULL AND expires_at <= now() - interval '1 hour' LIMIT ${limit})`.execute(
      this.db,
    );
    return Number(r.numAffectedRows ?? 0);
  }
}
