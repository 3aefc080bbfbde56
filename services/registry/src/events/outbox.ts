import type { Kysely } from 'kysely';
import type { Bus } from '@mcpx/bus';
import type { Database, Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import type { Counter, Meter, Tracer } from '@opentelemetry/api';
import { withSpan } from '@mcpx/telemetry';

/** One JetStream event of the registry: its subject, payload (JSON) and message id. */
export interface OutboxEvent {
  subject: string;
  payload: unknown;
  /** JetStream de-duplicates on it: an event published again (after a crash) is stored once. */
  msgId: string;
}

/** The most rows one sweep publishes (the next sweep takes the rest). */
const SWEEP_BATCH = 100;
/**
 * A periodic sweep leaves rows younger than this to the instance that committed them (its
 * publish follows the commit at once); the sweep at start takes every row.
 */
const SWEEP_GRACE_MS = 10_000;

interface RecordedEvent {
  id: string;
  subject: string;
  payload: unknown;
  msg_id: string;
}

/**
 * The registry's outbox (the projector's discipline for its own events): an event is written in
 * the transaction that commits its change (`record`), and published after the commit (`publish`,
 * the rows just written; `sweep`, every row left, oldest first), each with its message id; a row is
 * deleted once JetStream acknowledged it. A registry killed between its commit and its publish
 * leaves the row, and the next sweep of any instance (one runs at start) sends it. The publish
 * after a commit holds no database connection while it waits for JetStream (a NATS outage must
 * not starve the pool of the actions); sweeps take rows with `FOR UPDATE SKIP LOCKED`, so two
 * sweeps never publish the same row at once, and a periodic sweep leaves the rows of the last
 * {@link SWEEP_GRACE_MS} to their committer. A row published twice (a crash after the publish and
 * before the delete, or a sweep meeting a committer's publish) carries the same id and is stored
 * once by JetStream (within its duplicate window); the projector is idempotent beyond it.
 *
 * Every JetStream event of the registry (`mcp.events.*`: server discovered or deleted, agent
 * changed) leaves through {@link commit}. The core-NATS notices stay fire-and-forget after their
 * commit, by design: `mcp.approvals.decided`, `mcp.inputs.answered` and `mcp.reviews.requested`
 * only tell a console to read again; their state is in Redis (approvals, input requests) or
 * Postgres (`registry.tool_changes`) and `ListApprovals`, `ListInputRequests`, `ListToolChanges`
 * are the source of truth, so a lost notice delays a refresh and loses nothing.
 */
export class EventOutbox {
  private readonly published: Counter | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;

  constructor(
    /** `meter`: `mcpx_registry_events_published_total`; `tracer`: a `registry.outbox.publish` span per batch of rows published. */
    private readonly deps: { db: Db; bus: Bus; log: Logger; meter?: Meter; tracer?: Tracer },
  ) {
    this.published = deps.meter?.createCounter('mcpx_registry_events_published_total', {
      description:
        'Registry events from the outbox by outcome: stored (JetStream acknowledged it) or failed (left for the next sweep)',
    });
  }

  /**
   * Runs `work` in one transaction; the events it `emit`s are written in that transaction and
   * published once it commits. A change that rolls back leaves no event; a registry that dies
   * after the commit leaves its events to the sweep. The one way the registry's JetStream events
   * leave it.
   */
  async commit<T>(work: (trx: Kysely<Database>, emit: (...events: OutboxEvent[]) => void) => Promise<T>): Promise<T> {
    let recorded: RecordedEvent[] = [];
    const value = await this.deps.db.transaction().execute(async (trx) => {
      const events: OutboxEvent[] = [];
      const result = await work(trx, (...e) => void events.push(...e));
      const ids = await this.record(trx, events);
      recorded = events.map((e, i) => ({ id: ids[i] ?? '', subject: e.subject, payload: e.payload, msg_id: e.msgId }));
      return result;
    });
    await this.publishCommitted(recorded);
    return value;
  }

  /** Writes `events` in the committing transaction; returns their row ids for {@link publish}. */
  async record(trx: Kysely<Database>, events: readonly OutboxEvent[]): Promise<string[]> {
    if (events.length === 0) return [];
    const rows = await trx
      .insertInto('registry.event_outbox')
      .values(events.map((e) => ({ subject: e.subject, payload: JSON.stringify(e.payload), msg_id: e.msgId })))
      .returning('id')
      .execute();
    return rows.map((r) => String(r.id));
  }

  /**
   * Publishes the committed rows `ids` (those another instance holds, or has sent, are skipped).
   * A failure is logged, not thrown: the change is committed and the sweep sends the event.
   */
  async publish(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const rows = await this.deps.db
      .selectFrom('registry.event_outbox')
      .select(['id', 'subject', 'payload', 'msg_id'])
      .where('id', 'in', [...ids])
      .orderBy('id')
      .execute();
    await this.publishCommitted(rows.map((r) => ({ ...r, id: String(r.id) })));
  }

  /**
   * Publishes every row left (oldest first, a batch at a time), or with `minAgeMs` only those
   * older than that; returns how many went out.
   */
  async sweep(minAgeMs = 0): Promise<number> {
    this.sweeping ??= (async () => {
      let total = 0;
      const before = new Date(Date.now() - minAgeMs);
      for (;;) {
        const n = await this.send((q) => (minAgeMs > 0 ? q.where('created_at', '<', before) : q).limit(SWEEP_BATCH));
        total += n;
        if (n < SWEEP_BATCH) return total;
      }
    })().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /** Sweeps now and then every `everyMs` (errors logged; the next sweep tries again). */
  start(everyMs = 2_000): void {
    let first = true;
    const run = (): void => {
      const minAgeMs = first ? 0 : SWEEP_GRACE_MS;
      first = false;
      void this.sweep(minAgeMs).then(
        (n) => {
          if (n > 0) this.deps.log.info('outbox: published events left by an earlier commit', { events: n });
        },
        (err: unknown) => this.deps.log.warn('outbox: sweep failed', { err: err as Error }),
      );
    };
    run();
    this.timer = setInterval(run, everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping?.catch(() => undefined);
  }

  /**
   * The publish after a commit: the rows just written, in order, with no connection held while
   * JetStream answers; those it acknowledged are deleted. A failure is logged, not thrown: the
   * change is committed and a sweep sends the rest.
   */
  private async publishCommitted(rows: readonly RecordedEvent[]): Promise<void> {
    if (rows.length === 0) return;
    const { done, error } = await this.publishRows(rows);
    try {
      await deletePublished(this.deps.db, rows, done);
    } catch (err) {
      // Published but not deleted: a sweep publishes it again with its id (stored once).
      this.deps.log.warn('outbox: published events not deleted, left for the sweep', {
        err: err as Error,
        events: done,
      });
    }
    if (error !== undefined)
      this.deps.log.warn('outbox: publish failed, left for the sweep', {
        err: error instanceof Error ? error : new Error('outbox: publish failed', { cause: error }),
        events: rows.length - done,
      });
  }

  /** Publishes `rows` in order until one fails (in a `registry.outbox.publish` span), counting each outcome. */
  private async publishRows(rows: readonly RecordedEvent[]): Promise<{ done: number; error: unknown }> {
    let done = 0;
    let error: unknown = undefined;
    const run = async (): Promise<void> => {
      for (const row of rows) {
        try {
          await this.deps.bus.publishEvent(row.subject, row.payload, row.msg_id);
        } catch (err) {
          error = err;
          return;
        }
        done++;
      }
    };
    if (rows.length > 0 && this.deps.tracer !== undefined) {
      await withSpan(this.deps.tracer, 'registry.outbox.publish', { 'mcpx.events': rows.length }, async (span) => {
        await run();
        span.setAttribute('mcpx.events_stored', done);
      });
    } else await run();
    if (done > 0) this.published?.add(done, { outcome: 'stored' });
    if (done < rows.length) this.published?.add(rows.length - done, { outcome: 'failed' });
    return { done, error };
  }

  /** A sweep's batch: the rows `narrow` selects (locked, oldest first), published, then deleted. */
  private async send(
    narrow: (q: ReturnType<EventOutbox['selectRows']>) => ReturnType<EventOutbox['selectRows']>,
  ): Promise<number> {
    const { sent, failure } = await this.deps.db.transaction().execute(async (trx) => {
      const rows = (await narrow(this.selectRows(trx)).execute()).map((r) => ({ ...r, id: String(r.id) }));
      const { done, error } = await this.publishRows(rows);
      // What JetStream acknowledged leaves the outbox (committed even when a later publish failed).
      await deletePublished(trx, rows, done);
      return { sent: done, failure: error };
    });
    if (failure !== undefined)
      throw failure instanceof Error ? failure : new Error('outbox: publish failed', { cause: failure });
    return sent;
  }

  private selectRows(trx: Kysely<Database>) {
    return trx
      .selectFrom('registry.event_outbox')
      .select(['id', 'subject', 'payload', 'msg_id'])
      .orderBy('id')
      .forUpdate()
      .skipLocked();
  }
}

/** Deletes the first `done` of `rows` (those JetStream acknowledged) from the outbox. */
async function deletePublished(db: Kysely<Database>, rows: readonly { id: string }[], done: number): Promise<void> {
  if (done === 0) return;
  await db
    .deleteFrom('registry.event_outbox')
    .where(
      'id',
      'in',
      rows.slice(0, done).map((r) => r.id),
    )
    .execute();
}
