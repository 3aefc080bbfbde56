import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { SpanKind, trace, type Tracer } from '@opentelemetry/api';
import {
  ErrorCodes,
  QueueGroups,
  WireError,
  decodeTaskRequest,
  encodePayload,
  isFinalTaskState,
  type Subjects,
  type TaskAnswered,
  type TaskQuestionsView,
  type TaskReply,
  type TaskRequest,
} from '@mcpx/contracts';
import { isPostgresUnavailable } from '@mcpx/db';
import type { InputGate } from '../input-requests.js';
import type { Logger } from '@mcpx/log';
import { endWithOutcome, extractTraceContext, traceCarrier } from '@mcpx/telemetry';
import { toWire } from '../wire-errors.js';
import { readOutcome, type TaskBroker } from './task-broker.js';
import { taskView, type TaskRow, type TaskStore } from './task-store.js';

const LIST_DEFAULT = 50;

/**
 * `mcp.proxy.tasks` (queue group `proxy`): any instance answers, from the rows, for the account
 * named in the request (a task of another account is `not_found`, as one that never was). `get`
 * and `list` show tasks, never results; `result` answers a finished task's stored reply (the
 * result, or the typed error it ended with) and an open one's `conflict`; `cancel` asks the
 * server and ends the task `cancelled`. A span per request (`proxy.tasks/<op>`), the child of
 * the trace context the request carries (the endpoint's `endpoint.tasks/<verb>`).
 */
export function startTaskService(d: {
  nc: NatsConnection;
  subjects: Subjects;
  store: TaskStore;
  broker: TaskBroker;
  log: Logger;
  tracer: Tracer;
  /** The input-request path a task's questions took: `questions` and `answer` read and answer its round. */
  inputs?: InputGate;
}): Subscription {
  const reply = (msg: Msg, body: TaskReply): void => {
    try {
      msg.respond(encodePayload(body));
    } catch (err) {
      d.log.warn('a task reply could not be sent', { err: err as Error });
    }
  };
  return d.nc.subscribe(d.subjects.proxyTasks, {
    queue: QueueGroups.proxy,
    callback: (err, msg) => {
      if (err !== null) return;
      let req: TaskRequest;
      try {
        req = decodeTaskRequest(msg.data);
      } catch (e) {
        reply(msg, { ok: false, error: toWire(e).toJSON() });
        return;
      }
      const asked = extractTraceContext(msg.headers);
      const span = d.tracer.startSpan(
        `proxy.tasks/${req.op}`,
        {
          kind: SpanKind.SERVER,
          attributes: { 'mcp.account': req.account, ...(req.op !== 'list' ? { 'mcpx.task': req.task } : {}) },
        },
        asked,
      );
      // What an operation sends the task's server (a cancel's `tasks/cancel`) carries this span.
      answerOnce(d, req, () => traceCarrier(trace.setSpan(asked, span))).then(
        (value) => {
          endWithOutcome(span);
          reply(msg, { ok: true, value });
        },
        (e: unknown) => {
          const wire = toWire(e);
          endWithOutcome(span, wire.code);
          reply(msg, { ok: false, error: wire.toJSON() });
        },
      );
    },
  });
}

/**
 * A request answered once more when the store's connection was lost under it (the pool has
 * dropped that connection; the next is fresh), else `unavailable` (retryable), never `internal`.
 * Every operation is idempotent (a cancel of an ended task answers it as it stands).
 */
type ServiceDeps = { store: TaskStore; broker: TaskBroker; inputs?: InputGate };

async function answerOnce(d: ServiceDeps, req: TaskRequest, carried: () => Record<string, string>): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await answer(d, req, carried);
    } catch (err) {
      if (!isPostgresUnavailable(err)) throw err;
      if (attempt >= 2)
        throw new WireError(ErrorCodes.unavailable, 'the task store is unavailable: try again', {
          dependency: 'postgres',
          retryAfterMs: 1_000,
        });
    }
  }
}

async function answer(d: ServiceDeps, req: TaskRequest, carried: () => Record<string, string>): Promise<unknown> {
  if (req.op === 'list')
    return { tasks: (await d.store.list(req.account, req.agent, req.limit ?? LIST_DEFAULT)).map(taskView) };
  const row = await d.store.get(req.account, req.task);
  if (row === null) throw new WireError(ErrorCodes.notFound, 'this account has no such task', { field: 'task' });
  switch (req.op) {
    case 'get':
      return taskView(row);
    case 'cancel': {
      if (isFinalTaskState(row.state)) return taskView(row);
      const ended = await d.broker.cancel(row, carried());
      return taskView(ended ?? (await d.store.get(req.account, req.task)) ?? row);
    }
    case 'questions': {
      const { inputs, id } = waiting(d, row);
      const round = await inputs.round(req.account, id);
      if (round === null) throw notAsking(row);
      return { inputRequestId: id, ...round } satisfies TaskQuestionsView;
    }
    case 'answer': {
      const { inputs, id } = waiting(d, row);
      if (req.inputRequestId !== id)
        throw new WireError(ErrorCodes.conflict, `the task waits on input request ${id}, not ${req.inputRequestId}`, {
          field: 'inputRequestId',
          task: row.id,
          inputRequestId: id,
        });
      const doc = { name: row.tool, server: row.server, remoteName: row.remote_name };
      return (await inputs.answerStored(req.account, doc, id, req.inputResponses)) satisfies TaskAnswered;
    }
    case 'result': {
      if (row.result_cbor === null) {
        if (!isFinalTaskState(row.state))
          throw new WireError(
            ErrorCodes.conflict,
            `the task is ${row.state}: its result is not there yet (wait for it with waitTask)`,
            { task: row.id, state: row.state },
          );
        throw new WireError(ErrorCodes.notFound, 'the task kept no result', { task: row.id, state: row.state });
      }
      await d.store.taken(req.account, req.task);
      const outcome = readOutcome(row.result_cbor);
      if (!outcome.ok) throw WireError.from(outcome.error);
      return outcome.result;
    }
  }
}

/** The round a task waits on: `conflict` when it asks nothing now (or this instance has no input path). */
function waiting(d: ServiceDeps, row: TaskRow): { inputs: InputGate; id: string } {
  if (d.inputs === undefined || row.state !== 'input_required' || row.input_request_id === null) throw notAsking(row);
  return { inputs: d.inputs, id: row.input_request_id };
}

function notAsking(row: TaskRow): WireError {
  return new WireError(ErrorCodes.conflict, `the task is ${row.state}: it asks nothing now`, {
    task: row.id,
    state: row.state,
  });
}
