// The proxy's brokered tasks, wired from its configuration (docs/tasks.md): a floor of `startProxy`.
import type { Bus } from '@mcpx/bus';
import { DEFAULT_TASK_SETTINGS, type Config } from '@mcpx/config';
import type { createDb } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { SpanKind } from '@opentelemetry/api';
import { CONNECTOR_CAPABILITIES, endTaskSession, type TaskWireTarget } from '@mcpx/mcp-client';
import type { OutboundFetch } from '@mcpx/outbound';
import { McpAttributes, endWithOutcome, tracingRequest, type Telemetry } from '@mcpx/telemetry';
import type { Catalog } from './catalog.js';
import type { ConnectionPool } from './connection-pool.js';
import type { InputGate } from './input-requests.js';
import type { replyLimits } from './reply-limits.js';
import { TaskBroker, type StoredOutcome } from './tasks/task-broker.js';
import { TaskCalls, taskRun } from './tasks/task-calls.js';
import { TaskEventsReplay } from './tasks/task-events-replay.js';
import { TaskStore, type TaskRow } from './tasks/task-store.js';

/** How long the DELETE that ends an ended 2025 task's session may take. */
const SESSION_END_TIMEOUT_MS = 10_000;

/** What is published while NATS is down is lost with the connection: each task's last event goes again once it is back. */
function replayedEvents(bus: Bus, telemetry: Telemetry, log: Logger): TaskEventsReplay {
  const events = new TaskEventsReplay((subject, event) => bus.notify(subject, event), telemetry.meter);
  events.follow(bus.nc, (err) => log.warn('task events could not be published again', { err }));
  return events;
}

/**
 * Brokered tasks: rows in Postgres, polled under a lease by one instance at a time, each reached
 * with the server's credentials as the catalog holds them now. A task's pool run is let go once
 * the task is recorded (a 2025 task's session kept open on its server, without a DELETE); the
 * instance that ends a 2025 task ends its session (`DELETE` with the session id).
 */
export function brokeredTasks(d: {
  config: Config;
  db: ReturnType<typeof createDb>;
  instance: string;
  catalog: Catalog;
  outboundFetch: OutboundFetch;
  bus: Bus;
  telemetry: Telemetry;
  log: Logger;
  pool: ConnectionPool;
  inputs: InputGate;
  limitsOfReply: ReturnType<typeof replyLimits>;
}): { taskStore: TaskStore; broker: TaskBroker; taskCalls: TaskCalls } {
  const { catalog, pool, bus, telemetry } = d;
  const taskStore = new TaskStore(d.db);
  const taskRequestFn = tracingRequest(d.outboundFetch.request);
  const target = async (row: TaskRow): Promise<TaskWireTarget> => {
    const entry = await catalog.server(row.account_id, row.server);
    if (entry === null) throw new Error(`the server ${row.server} is no longer connected`);
    return {
      era: row.dialect === '2026-07-28' ? 'modern' : 'legacy',
      url: new URL(entry.url),
      request: taskRequestFn,
      headers: entry.headers,
      protocolVersion: row.protocol_version,
      ...(row.session_id !== null ? { sessionId: row.session_id } : {}),
      capabilities: CONNECTOR_CAPABILITIES,
    };
  };
  const sessionsEnded = telemetry.meter.createCounter('mcpx_proxy_task_sessions_ended_total', {
    description: "2025 tasks' sessions ended (DELETE) when their task ended, by outcome (ended, failed)",
  });
  /** A 2025 task's session, ended once its task ended (its pool run was let go when the task was recorded). */
  const endSession = async (row: TaskRow): Promise<void> => {
    if (row.dialect === '2026-07-28' || row.session_id === null) return;
    const span = telemetry.tracer.startSpan('proxy.task.session_end', {
      kind: SpanKind.CLIENT,
      attributes: { [McpAttributes.server]: row.server, 'mcpx.task.state': row.state },
    });
    let ok = false;
    try {
      ok = await endTaskSession(await target(row), SESSION_END_TIMEOUT_MS);
    } catch {
      // The server is no longer in the catalog: its session is none of ours to end.
    } finally {
      sessionsEnded.add(1, { outcome: ok ? 'ended' : 'failed' });
      endWithOutcome(span, ok ? undefined : 'transport_error');
    }
  };
  const events = replayedEvents(bus, telemetry, d.log);
  const broker: TaskBroker = new TaskBroker({
    store: taskStore,
    instance: d.instance,
    settings: d.config.proxy.tasks ?? DEFAULT_TASK_SETTINGS,
    target,
    shape: (row, result, ms): StoredOutcome => taskCalls.shape(row, result, ms),
    publish: (subject, event) => events.send(subject, event),
    subjects: bus.subjects,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    log: d.log,
    onEnded: (row) => {
      void pool.endRun(row.account_id, taskRun(row.id));
      void endSession(row);
    },
    onPolled: (row) => pool.touch(row.account_id, taskRun(row.id)),
    // A task's questions are input requests, as a call's are.
    inputs: d.inputs,
    // The other instances' notices: leases let go, a task ended there.
    databaseUrl: d.config.databaseUrl,
  });
  const taskCalls: TaskCalls = new TaskCalls({
    broker,
    store: taskStore,
    maxRunningPerAccount: d.config.quotas.runningTasksPerAccount,
    ...d.limitsOfReply, // its flatten and resultBytes: a task's result is bounded as a call's
    releaseRun: (account, run, opts) => void pool.endRun(account, run, opts),
  });
  return { taskStore, broker, taskCalls };
}
