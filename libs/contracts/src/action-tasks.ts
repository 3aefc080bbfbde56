import type { ActionType } from './api.js';
import { WRITERS, anyObject, arr, agent, int, obj, str, taskView } from './action-schemas.js';
import type { ActionSpec } from './action-types.js';

/**
 * The task actions of the action map (docs/tasks.md#people): the signer's account's brokered
 * tasks, asked of the proxies' task service by the registry.
 */
export const TASK_ACTIONS: {
  readonly [T in Extract<ActionType, 'ListTasks' | 'GetTask' | 'CancelTask' | 'GetTaskResult'>]: ActionSpec;
} = {
  ListTasks: {
    summary: "The account's brokered tasks (one agent's when named), newest first, without their results",
    roles: WRITERS,
    request: obj({ agent, limit: int }),
    response: obj({ tasks: arr(taskView) }, ['tasks']),
    errors: ['not_found', 'timeout', 'transport_error'],
  },
  GetTask: {
    summary: 'One brokered task as it stands',
    roles: WRITERS,
    request: obj({ task: str }, ['task']),
    response: obj({ task: taskView }, ['task']),
    errors: ['not_found', 'timeout', 'transport_error'],
  },
  CancelTask: {
    summary: "Asks a task's server to cancel it; the task ends cancelled",
    roles: WRITERS,
    request: obj({ task: str }, ['task']),
    response: obj({ task: taskView }, ['task']),
    errors: ['not_found', 'timeout', 'transport_error'],
  },
  GetTaskResult: {
    summary:
      "A finished task's result as its call would have answered it (bounded as a call's); a task that failed, was cancelled or expired is its typed error",
    roles: WRITERS,
    request: obj({ task: str }, ['task']),
    response: obj({ result: anyObject, taskId: str }, ['result', 'taskId']),
    errors: ['not_found', 'conflict', 'server_error', 'cancelled', 'timeout', 'transport_error', 'input_refused'],
  },
};
