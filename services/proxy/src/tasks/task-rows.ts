import { randomBytes } from 'node:crypto';
import { TaskStates, type TaskState, type TaskView } from '@mcpx/contracts';
import { McpAttributes, type Attributes } from '@mcpx/telemetry';
import type { TaskRow } from './task-store.js';

// A task's names and faces: the connector's id of a new task, and what a row shows.

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `tsk_` and 24 base32 characters (120 random bits): the connector's id, never the server's. */
export function newTaskId(): string {
  const bytes = randomBytes(15);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `tsk_${out}`;
}

const OPEN = [TaskStates.working, TaskStates.inputRequired];

/** Whether a row's state is open (still polled). */
export function isOpen(row: TaskRow): boolean {
  return row.finished_at === null && (OPEN as string[]).includes(row.state);
}

/** A row as `mcp.proxy.tasks` shows it: never its result, session or auth context; an open one's poller (the instance holding its lease). */
export function taskView(row: TaskRow): TaskView {
  return {
    id: row.id,
    agent: row.agent_id,
    run: row.run,
    server: row.server,
    tool: row.tool,
    state: row.state as TaskState,
    ...(row.status_message !== null ? { statusMessage: row.status_message } : {}),
    dialect: row.dialect,
    ...(row.input_request_id !== null && row.state === TaskStates.inputRequired
      ? { inputRequestId: row.input_request_id }
      : {}),
    ...(row.error_code !== null ? { error: { code: row.error_code, message: row.error_message ?? '' } } : {}),
    resultReady: row.result_cbor !== null,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    expiresAt: iso(row.expires_at),
    ...(row.finished_at !== null ? { finishedAt: iso(row.finished_at) } : {}),
    ...(row.finished_at === null && row.lease_owner !== null ? { poller: row.lease_owner } : {}),
  };
}

function iso(d: Date | string): string {
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

/** The attributes of a span of the broker's own request about a task (`method`: `tasks/get`, `tasks/cancel`). */
export function taskSpanAttributes(row: TaskRow, method: string): Attributes {
  return {
    'mcp.account': row.account_id,
    'mcpx.task': row.id,
    [McpAttributes.server]: row.server,
    [McpAttributes.methodName]: method,
    'mcpx.task.dialect': row.dialect,
  };
}
