import type { ProxyResult } from '@mcpx/domain';
import type { ActionType } from './api.js';
import { agentRef } from './action-components.js';
import { WRITERS, taskAnswer, taskErrors, type ActionSpec } from './action-parts.js';
import { absentOrNull, list, str, written } from './field-rules.js';
import { taskViewValue } from './tasks.js';
import * as F from './action-fields.js';

/**
 * The task actions of the action map (docs/tasks.md#people): the signer's account's brokered
 * tasks, asked of the proxies' task service by the registry.
 */
export const TASK_ACTIONS = {
  ListTasks: {
    summary: "The account's brokered tasks (one agent's when named), newest first, without their results",
    roles: WRITERS,
    /** Newest first; `agent` by id or name; at most `TASK_LIST_MAX`. */
    request: { agent: absentOrNull(agentRef), limit: absentOrNull(F.taskPageSize) },
    response: { tasks: list(taskViewValue) },
    errors: taskErrors,
  },
  GetTask: {
    summary: 'One brokered task as it stands',
    roles: WRITERS,
    request: { task: F.taskId },
    response: taskAnswer,
    errors: taskErrors,
  },
  CancelTask: {
    summary: "Asks a task's server to cancel it; the task ends cancelled",
    roles: WRITERS,
    request: { task: F.taskId },
    response: taskAnswer,
    errors: taskErrors,
  },
  GetTaskResult: {
    summary:
      "A finished task's result as its call would have answered it (bounded as a call's); a task that failed, was cancelled or expired is its typed error",
    roles: WRITERS,
    request: { task: F.taskId },
    response: { result: written<ProxyResult>(), taskId: str },
    errors: ['not_found', 'conflict', 'server_error', 'cancelled', 'timeout', 'transport_error', 'input_refused'],
  },
} as const satisfies {
  readonly [T in Extract<ActionType, 'ListTasks' | 'GetTask' | 'CancelTask' | 'GetTaskResult'>]: ActionSpec;
};
