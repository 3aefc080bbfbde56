import { sql, type Kysely } from 'kysely';
import type { Bus, JetStreamPublisher, OutgoingEvent } from '@mcpx/bus';
import type { AgentToolsChangedEvent } from '@mcpx/contracts';
import type { Database, Db, PendingToolsEvent, ToolsDiff } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { McpAttributes, withSpan, type Counter, type Meter, type Tracer } from '@mcpx/telemetry';

/** One agent's agent-tools-changed event. */
export interface AgentChange {
  agent: string;
  version: number;
  diff: ToolsDiff;
}

/**
 * The outbox of agent-tools-changed. A change (one projection run) records its events with the
 * agents' rows (`agent_sets.pending`) and its id in `open_changes`, in the transaction that makes
 * it; after JetStream acknowledged every event the id is deleted. A change still open after a crash
 * is published again from the rows, by the redelivered event that caused it or by the sweep, with
 * the same message ids, so JetStream stores each event once (within its duplicate window).
 */
export class ChangeLog {
  private readonly published: Counter | undefined;

  constructor(
    /** `meter`: `mcpx_projector_events_published_total`; `tracer`: a `projector.publish` span per change's events. */
    private readonly deps: {
      db: Db;
      bus: Bus;
      log: Logger;
      publisher: JetStreamPublisher;
      meter?: Meter;
      tracer?: Tracer;
    },
  ) {
    this.published = deps.meter?.createCounter('mcpx_projector_events_published_total', {
      description:
        'agent-tools-changed events by outcome: stored (JetStream acknowledged each) or failed (the batch will be published again)',
    });
  }

  /**
   * Records `change` as open, in the change's own transaction, with the diff its agents share (an
   * agent's pending entry carries its own diff only when it differs).
   */
  async open(trx: Kysely<Database>, account: string, change: string, diff?: ToolsDiff): Promise<void> {
    await trx
      .insertInto('projector.open_changes')
      .values({ id: change, account_id: account, diff: diff === undefined ? null : JSON.stringify(diff) })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /** Publishes the events of a committed change, then closes it. */
  async publish(account: string, change: string, changes: readonly AgentChange[]): Promise<void> {
    const { bus, publisher, db } = this.deps;
    const events: OutgoingEvent[] = changes.map((c) => {
      const payload: AgentToolsChangedEvent = {
        account,
        agent: c.agent,
        version: c.version,
        added: c.diff.added,
        changed: c.diff.changed,
        removed: c.diff.removed,
      };
      return {
        subject: bus.subjects.agentToolsChanged(account, c.agent),
        payload,
        msgId: `tools-${account}-${c.agent}-${c.version}`,
      };
    });
    const publishAll = async (): Promise<void> => {
      try {
        await publisher.publishAll(events);
        this.published?.add(events.length, { outcome: 'stored' });
      } catch (err) {
        // The whole batch is published again (same message ids, stored once): counted as failed now.
        this.published?.add(events.length, { outcome: 'failed' });
        throw err;
      }
    };
    if (this.deps.tracer === undefined) await publishAll();
    else
      await withSpan(
        this.deps.tracer,
        'projector.publish',
        { [McpAttributes.agentsTouched]: events.length, 'mcpx.change.kind': change.slice(0, 1) },
        publishAll,
      );
    await db.deleteFrom('projector.open_changes').where('id', '=', change).execute();
  }

  /**
   * Publishes again whatever the agents' rows hold of an open change (a crash came between its
   * commit and the end of its publishes). Returns how many events went out; 0 when it is closed.
   */
  async recover(account: string, change: string): Promise<number> {
    const { db, log } = this.deps;
    const open = await db
      .selectFrom('projector.open_changes')
      .select(['id', 'diff'])
      .where('id', '=', change)
      .executeTakeFirst();
    if (open === undefined) return 0;
    const rows = await sql<{ agent_id: string; entry: PendingToolsEvent }>`
      SELECT a.agent_id, e.value AS entry
      FROM projector.agent_sets a CROSS JOIN LATERAL jsonb_array_elements(a.pending) e
      WHERE a.account_id = ${account} AND a.pending IS NOT NULL AND e.value ->> 'change' = ${change}`.execute(db);
    const shared = open.diff ?? { added: {}, changed: {}, removed: [] };
    const changes = rows.rows.map((r) => ({
      agent: r.agent_id,
      version: r.entry.version,
      diff: {
        added: r.entry.added ?? shared.added,
        changed: r.entry.changed ?? shared.changed,
        removed: r.entry.removed ?? shared.removed,
      },
    }));
    log.info('publishing an interrupted change again', { account, change, events: changes.length });
    await this.publish(account, change, changes);
    return changes.length;
  }

  /** Recovers every change left open longer than `olderThanMs` (their projector is gone). */
  async sweep(olderThanMs: number): Promise<number> {
    const stale = await this.deps.db
      .selectFrom('projector.open_changes')
      .select(['id', 'account_id'])
      .where('created_at', '<', new Date(Date.now() - olderThanMs))
      .orderBy('created_at')
      .limit(100)
      .execute();
    let n = 0;
    for (const c of stale) n += await this.recover(c.account_id, c.id);
    return n;
  }
}
