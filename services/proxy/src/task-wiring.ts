// The proxy's brokered tasks, wired from its configuration (docs/tasks.md): a floor of `startProxy`.
import type { Bus } from '@mcpx/bus';
import { DEFAULT_TASK_SETTINGS, type Config } from '@mcpx/config';
import type { createDb } from '@mcpx/db';
import type { Logger } from '@mcpx/log';
import { CONNECTOR_CAPABILITIES } from '@mcpx/mcp-client';
import type { OutboundFetch } from '@mcpx/outbound';
import { tracingRequest, type Telemetry } from '@mcpx/telemetry';
import type { Catalog } from './catalog.js';
import type { ConnectionPool } from './connection-pool.js';
import type { InputGate } from './input-requests.js';
import type { replyLimits } from './reply-limits.js';
import { TaskBroker, type StoredOutcome } from './tasks/task-broker.js';
import { TaskCalls, taskRun } from './tasks/task-calls.js';
import { TaskStore } from './tasks/task-store.js';

/**
 * Brokered tasks: rows in Postgres, polled under a lease by one instance at a time, each reached
 * with the server's credentials as the catalog holds them now. A task's run is the pool's: ended
 * with the task, kept from going idle while polled.
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
  const broker: TaskBroker = new TaskBroker({
    store: taskStore,
    instance: d.instance,
    settings: d.config.proxy.tasks ?? DEFAULT_TASK_SETTINGS,
    target: async (row) => {
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
    },
    shape: (row, result, ms): StoredOutcome => taskCalls.shape(row, result, ms),
    publish: (subject, event) => bus.notify(subject, event),
    subjects: bus.subjects,
    tracer: telemetry.tracer,
    meter: telemetry.meter,
    log: d.log,
    onEnded: (row) => void pool.endRun(row.account_id, taskRun(row.id)),
    onPolled: (row) => pool.touch(row.account_id, taskRun(row.id)),
    // A task's questions are input requests, as a call's are.
    inputs: d.inputs,
  });
  const taskCalls: TaskCalls = new TaskCalls({
    broker,
    store: taskStore,
    maxRunningPerAccount: d.config.quotas.runningTasksPerAccount,
    ...d.limitsOfReply, // its flatten and resultBytes: a task's result is bounded as a call's
    releaseRun: (account, run) => void pool.endRun(account, run),
  });
  return { taskStore, broker, taskCalls };
}
