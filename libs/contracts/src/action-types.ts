import type { ActionType } from './api.js';
import type { ACTION_MAP } from './action-map.js';
import type { Shaped } from './field-rules.js';

/**
 * The action API, typed end to end from its one definition, `ACTION_MAP` (action-map.ts): per
 * action type, its request and response are the values its field-rule tables check. The
 * registry's dispatcher decodes each request with its table and types each handler's answer by
 * the response; the CLI and the console take their request and response types from here.
 */
type Map = typeof ACTION_MAP;

/** The request of each action (without `type`). */
export type ActionRequests = { [T in ActionType]: Shaped<Map[T]['request']> };

/** The response of each action. */
export type ActionResponses = { [T in ActionType]: Shaped<Map[T]['response']> };

export type ActionRequest<T extends ActionType> = ActionRequests[T];
export type ActionResponse<T extends ActionType> = ActionResponses[T];
/** An action as sent in the envelope: its type and its request. */
export type ActionOf<T extends ActionType> = { type: T } & ActionRequests[T];

/** What SetMcpServer dropped because the server moved to another origin (names only, never values). */
export type DroppedSecrets = NonNullable<ActionResponse<'SetMcpServer'>['droppedSecrets']>;
/** A server just discovered, and what its OAuth needs next. */
export type DiscoveredServerAnswer = ActionResponse<'RefreshMcpServer'>;
/** An OAuth sign-in to an agent endpoint waiting for the owner's decision. */
export type SignInRequestView = ActionResponse<'ListSignInRequests'>['signIns'][number];
