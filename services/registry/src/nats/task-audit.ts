import { sql } from 'kysely';
import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import { QueueGroups, TaskStates, decodeTaskEvent, type TaskEvent, type TaskView } from '@mcpx/contracts';
import type { Db } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { TaskClient } from '@mcpx/proxy-client';
import { recordAudit } from '../audit/audit-log.js';

/** The audit actions of a task's life the registry records (docs/tasks.md#people). */
export const TaskAuditActions = { created: 'TaskCreated', cancelled: 'TaskCancelled', expired: 'TaskExpired' } as const;
type TaskAuditAction = (typeof TaskAuditActions)[keyof typeof TaskAuditActions];

/** Tasks whose creation this instance recorded (or found recorded), newest kept: most events need no query. */
const SEEN_MAX = 20_000;

/** Who a task entry names: the proxies brokered it (the run that made the call is in the entry). */
const TASK_SIGNER = { signer: 'proxy', role: 'system' } as const;

export interface TaskAuditDeps {
  bus: Bus;
  db: Db;
  log: Logger;
}

/**
 * The audit log's entries of brokered tasks: created, cancelled, expired. The proxies publish each
 * change of a task on `mcp.tasks.<acct>.<task>` (core NATS); one registry instance hears each
 * (queue group `registry`) and writes the entry, so the registry stays the only writer of its log
 * (as for a token holder's approval decisions). An entry is worded from the task's row (the task
 * service), never from the event, and written once: a task's first event of any state records
 * its creation (so a lost creation event is made up by the next), and a second entry of the same
 * action for the same task is never written (the check and the write take turns per task).
 * Never arguments, results or credentials.
 */
export function recordTaskAudit(deps: TaskAuditDeps): Subscription {
  const tasks = new TaskClient(deps.bus.nc, deps.bus.subjects);
  const seen = new Set<string>();
  const mark = (id: string): void => {
    seen.add(id);
    if (seen.size > SEEN_MAX) seen.delete(seen.values().next().value as string);
  };
  const onEvent = async (event: TaskEvent): Promise<void> => {
    const actions: TaskAuditAction[] = [];
    if (!seen.has(event.task)) actions.push(TaskAuditActions.created);
    if (event.state === TaskStates.cancelled) actions.push(TaskAuditActions.cancelled);
    if (event.state === TaskStates.expired) actions.push(TaskAuditActions.expired);
    if (actions.length === 0) return;
    const view = await tasks.getTask(event.account, event.task);
    for (const action of actions) await writeOnce(deps.db, event.account, view, action);
    mark(event.task);
  };
  return deps.bus.nc.subscribe(deps.bus.subjects.taskEventsAll, {
    queue: QueueGroups.registry,
    callback: (err, msg) => {
      if (err !== null) return;
      let event: TaskEvent;
      try {
        event = decodeTaskEvent(msg.data);
      } catch {
        return;
      }
      onEvent(event).catch((e: unknown) =>
        deps.log.warn('a task audit entry could not be written', { task: event.task, err: e as Error }),
      );
    },
  });
}

/** Writes the entry of `action` for the task unless the log has it (two instances, or a replayed event, take turns on the task). */
async function writeOnce(db: Db, account: string, view: TaskView, action: TaskAuditAction): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`task-audit:${account}:${view.id}`}, 0))`.execute(trx);
    const written = await trx
      .selectFrom('registry.audit_events')
      .select('id')
      .where('account_id', '=', account)
      .where('target_kind', '=', 'task')
      .where('target', '=', view.id)
      .where('action', '=', action)
      // No entry of a task precedes its creation (an hour's margin for the clocks): a short range of the log.
      .where('at', '>=', new Date(Date.parse(view.createdAt) - 3_600_000))
      .executeTakeFirst();
    if (written !== undefined) return;
    await recordAudit(trx, {
      account,
      ...TASK_SIGNER,
      action,
      target: { kind: 'task', name: view.id },
      after: {
        state: action === TaskAuditActions.created ? TaskStates.working : view.state,
        agent: view.agent,
        run: view.run,
        server: view.server,
        tool: view.tool,
        dialect: view.dialect,
        ...(action === TaskAuditActions.expired ? { expiresAt: view.expiresAt } : {}),
      },
    });
  });
}
