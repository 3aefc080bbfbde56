import { decodeStrict, encodePayload } from './codec.js';
import { invalidInput } from './errors.js';
import * as R from './field-rules.js';
import type { WireErrorShape } from './errors.js';
import { INPUT_LIMITS, INPUT_REQUEST_ID_RE, type InputRequestItem } from './inputs.js';

/**
 * Brokered tasks (docs/tasks.md): what crosses the bus about them. A task's id is the
 * connector's own (`tsk_` and 24 base32 characters), never the server's.
 */
export const TASK_ID_RE = /^tsk_[a-z2-7]{24}$/;

/** A task's state as the connector shows it: the server's, plus `expired` (its ttl ended first). */
export const TaskStates = {
  working: 'working',
  inputRequired: 'input_required',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  expired: 'expired',
} as const;
export type TaskState = (typeof TaskStates)[keyof typeof TaskStates];
const TASK_STATES = Object.values(TaskStates);

/** Whether a state is final: the row is no longer polled. */
export function isFinalTaskState(state: string): boolean {
  return (
    state === TaskStates.completed ||
    state === TaskStates.failed ||
    state === TaskStates.cancelled ||
    state === TaskStates.expired
  );
}

/** Payload of `mcp.tasks.<acct>.<task>`: one change of a task's state or status message. */
export interface TaskEvent {
  account: string;
  agent: string;
  task: string;
  state: TaskState;
  statusMessage?: string;
  /** The input request its server's questions were recorded as (state `input_required`). */
  inputRequestId?: string;
  /** Set on `failed` and `expired`: why, as a stable code. */
  errorCode?: string;
  /** Epoch ms. */
  at: number;
}

/** `mcp.proxy.tasks`' request: one operation on the account's tasks. */
export type TaskRequest =
  | { op: 'get'; account: string; task: string }
  | { op: 'cancel'; account: string; task: string }
  | { op: 'result'; account: string; task: string }
  | { op: 'list'; account: string; agent?: string; limit?: number }
  /** The round a task waits on (`input_required`): its questions, and who answers each. */
  | { op: 'questions'; account: string; task: string }
  /** The caller's answers to its questions of the round (by key); partial answers are kept until all are in. */
  | {
      op: 'answer';
      account: string;
      task: string;
      inputRequestId: string;
      inputResponses: Record<string, unknown>;
    };

/** `answer`'s value: whether every question of the round is now answered (the task goes on at its next poll). */
export interface TaskAnswered {
  complete: boolean;
}

/** `mcp.proxy.tasks`' reply: a `TaskView` (get, cancel), `{tasks}` (list) or a call's result (result). */
export type TaskReply = { ok: true; value: unknown } | { ok: false; error: WireErrorShape };

/** At most this many tasks in one list. */
export const TASK_LIST_MAX = 200;

const id = R.matching(/^[A-Za-z0-9_-]{1,128}$/, 'an id');
const taskId = R.matching(TASK_ID_RE, 'a task id (tsk_…)');
const state = R.oneOf(...TASK_STATES);

const responses: R.Rule<Record<string, unknown>> = (v, field) => {
  if (!R.isMap(v)) throw invalidInput(field, 'must be a map of answers by question key');
  const n = Object.keys(v).length;
  if (n === 0 || n > INPUT_LIMITS.requestsPerRound)
    throw invalidInput(field, `must answer 1 to ${INPUT_LIMITS.requestsPerRound} questions`);
  return v;
};

const requestFields = R.shape({
  op: R.oneOf('get', 'cancel', 'result', 'list', 'questions', 'answer'),
  account: id,
  task: R.optional(taskId),
  agent: R.optional(id),
  limit: R.optional(R.int),
  inputRequestId: R.optional(R.matching(INPUT_REQUEST_ID_RE, 'an input request id (inp_…)')),
  inputResponses: R.optional(responses),
});

/** Decodes `mcp.proxy.tasks`' request; a bad field is `invalid_input` naming it. */
export function decodeTaskRequest(bytes: Uint8Array): TaskRequest {
  const v = decodeStrict(bytes, 'request');
  if (!R.isMap(v)) throw invalidInput('request', 'must be a map');
  const r = requestFields(v, '');
  if (r.op === 'list') {
    if (r.limit !== undefined && (r.limit < 1 || r.limit > TASK_LIST_MAX))
      throw invalidInput('limit', `must be 1 to ${TASK_LIST_MAX}`);
    return {
      op: 'list',
      account: r.account,
      ...(r.agent !== undefined ? { agent: r.agent } : {}),
      ...(r.limit !== undefined ? { limit: r.limit } : {}),
    };
  }
  if (r.task === undefined) throw invalidInput('task', 'is required');
  if (r.op === 'answer') {
    if (r.inputRequestId === undefined) throw invalidInput('inputRequestId', 'is required');
    if (r.inputResponses === undefined) throw invalidInput('inputResponses', 'is required');
    const { inputRequestId, inputResponses } = r;
    return { op: 'answer', account: r.account, task: r.task, inputRequestId, inputResponses };
  }
  return { op: r.op, account: r.account, task: r.task };
}

export function encodeTaskRequest(req: TaskRequest): Uint8Array {
  return encodePayload(req);
}

/** Decodes a `mcp.tasks.<acct>.<task>` event; a bad field is `invalid_input` naming it. */
export const decodeTaskEvent: (bytes: Uint8Array) => TaskEvent = R.payloadDecoder('taskEvent', {
  account: id,
  agent: id,
  task: taskId,
  state,
  statusMessage: R.optional(R.anyStr),
  inputRequestId: R.optional(R.str),
  errorCode: R.optional(R.str),
  at: R.num,
});

/** A task as `mcp.proxy.tasks` shows it: never its arguments, its result (see `result`) or its credentials. */
const taskViewTable = {
  id: taskId,
  agent: R.str,
  run: R.str,
  server: R.str,
  tool: R.str,
  state,
  statusMessage: R.optional(R.anyStr),
  dialect: R.str,
  inputRequestId: R.optional(R.str),
  error: R.optional(R.checkedMap({ code: R.str, message: R.anyStr })),
  /** Whether a result is kept (a completed task's, until it is taken or its ttl ends). */
  resultReady: R.bool,
  createdAt: R.str,
  updatedAt: R.str,
  expiresAt: R.str,
  finishedAt: R.optional(R.str),
  /** The proxy instance that polls an open task (its lease holder), as the instance names itself. */
  poller: R.optional(R.str),
};
export type TaskView = R.Shaped<typeof taskViewTable>;
/** A `TaskView`, checked in place. */
export const taskViewValue: R.Rule<TaskView> = R.checkedMap(taskViewTable);

/** Decodes `mcp.proxy.tasks`' reply envelope (the value is checked by the caller, per op). */
export function decodeTaskReply(bytes: Uint8Array): TaskReply {
  const v = decodeStrict(bytes, 'reply');
  if (!R.isMap(v)) throw invalidInput('reply', 'must be a map');
  if (v.ok === true) return { ok: true, value: R.anything(v.value, 'reply.value') };
  if (v.ok === false && R.isMap(v.error)) return { ok: false, error: v.error as unknown as WireErrorShape };
  throw invalidInput('reply.ok', 'must be a boolean');
}

/** `questions`' value: the task's open round (its input request), the questions, and the keys answered so far. */
const taskQuestionsTable = {
  inputRequestId: R.str,
  requests: (v: unknown, field: string) => {
    if (!Array.isArray(v) || v.some((q) => !R.isMap(q) || typeof q.key !== 'string'))
      throw invalidInput(field, 'must be a list of questions');
    return v as InputRequestItem[];
  },
  answered: (v: unknown, field: string) => {
    if (!Array.isArray(v) || v.some((k) => typeof k !== 'string')) throw invalidInput(field, 'must be a list of keys');
    return v as string[];
  },
  expiresAt: R.str,
};
export type TaskQuestionsView = R.Shaped<typeof taskQuestionsTable>;
/** A `TaskQuestionsView`, checked in place. */
export const taskQuestionsValue: R.Rule<TaskQuestionsView> = R.checkedMap(taskQuestionsTable);
