import type { Tracer } from '@opentelemetry/api';
import type { ActionType } from '@mcpx/contracts';
import type { AgentsDeps } from '../agents/agents-deps.js';
import type { ReviewDeps } from '../review/review-deps.js';
import type { ServersDeps } from '../servers/servers-deps.js';
import type { SignInActionDeps } from '../sign-ins/sign-in.actions.js';
import type { ActionHandler as RoomHandler } from '../shared/action-handler.js';

export type { Action, ActionInput, Caller } from '../shared/action-handler.js';

/**
 * What the dispatcher hands every action: the union of what each room's actions use (each room
 * names its own: `AgentsDeps`, `ReviewDeps`, `ServersDeps`, and the narrow ones of audit, activity,
 * signers and sign-ins), built by the registry's wiring.
 */
export interface ActionDeps extends AgentsDeps, ReviewDeps, ServersDeps, SignInActionDeps {
  tracer: Tracer;
}

/** A handler given the whole of {@link ActionDeps}: the dispatch table's, and an action of this room's own. */
export type ActionHandler<T extends ActionType> = RoomHandler<T, ActionDeps>;
