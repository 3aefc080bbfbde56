// The action API's types as the console's code sees them: the request and response of each action
// type are those of the action map in the contracts library. Types only: the browser never loads
// this file, and the console's code imports nothing of the workspace (the path below is read by
// the type checker, through the contracts project's reference in ../tsconfig.public.json).
import type { ActionRequest, ActionResponse, ActionType } from '../../libs/contracts/src/index.js';

export type {
  ActionRequest,
  ActionResponse,
  ActionType,
  AgentView,
  McpServerConfigInput,
  RedactedMcpServer,
} from '../../libs/contracts/src/index.js';

/** The fields of an action of type `T`, optional when its request has no required field. */
export type ActionFields<T extends ActionType> =
  {} extends ActionRequest<T> ? [fields?: ActionRequest<T>] : [fields: ActionRequest<T>];

/** `act(type, fields)`: signs and sends one action; its answer is the map's response of `type`. */
export type Act = <T extends ActionType>(type: T, ...fields: ActionFields<T>) => Promise<ActionResponse<T>>;
