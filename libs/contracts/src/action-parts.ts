import { LIST_MAX, type ActionRole } from './action-components.js';
import { redactedServer } from './action-views.js';
import { changeCid, remoteTool, serverRef } from './action-fields.js';
import {
  anyStr,
  bool,
  constant,
  int,
  list,
  num,
  oneOf,
  optional,
  shape,
  str,
  written,
  type Table,
} from './field-rules.js';
import type { ErrorCode } from './errors.js';
import type { AgentToolsReply, ProviderToolSet } from './payloads.js';
import { taskViewValue } from './tasks.js';

/**
 * One action of the API, defined once: its request and response as field-rule tables (the
 * dispatcher decodes the request with its table before the handler runs; the TypeScript types
 * `ActionRequests`/`ActionResponses` and the OpenAPI document are derived from both), the roles
 * that may perform it and the codes it answers.
 */
export interface ActionSpec<Q extends Table = Table, R extends Table = Table> {
  /** One line on what the action does. */
  summary: string;
  roles: readonly ActionRole[];
  request: Q;
  response: R;
  /** Codes the action answers besides the envelope's (`invalid_input`, `unauthenticated`, `forbidden`, `rate_limited`, `internal`). */
  errors?: readonly ErrorCode[];
}

export const ALL: readonly ActionRole[] = ['OWNER', 'WRITER', 'AGENT'];
export const WRITERS: readonly ActionRole[] = ['OWNER', 'WRITER'];
export const OWNER: readonly ActionRole[] = ['OWNER'];
export const nothing = {};
export const names = list(str, LIST_MAX);
export const tools = list(written<AgentToolsReply['documents'][number]>());
export const providerTools = {
  openai: list(written<ProviderToolSet['openai'][number]>()),
  anthropic: list(written<ProviderToolSet['anthropic'][number]>()),
};
export const discovered = {
  server: redactedServer,
  authorizationUrl: optional(str),
  authorizationError: optional(str),
};
export const level = oneOf('act', 'always_ask');
export const review = { server: serverRef, tool: remoteTool, cid: changeCid };
export const reviewed = {
  server: str,
  tool: str,
  cid: str,
  decision: oneOf('accepted', 'rejected'),
  /** Whether agents go without the tool while its change stays held. */
  withheld: optional(bool),
};
export const taskErrors: readonly ErrorCode[] = ['not_found', 'timeout', 'transport_error'];
export const taskAnswer = { task: taskViewValue };

/** The codes a call through the proxy answers. */
export const invokeErrors: readonly ErrorCode[] = [
  'not_found',
  'not_granted',
  'invalid_arguments',
  'server_error',
  'transport_error',
  'auth_required',
  'timeout',
  'call_lost',
  'maybe_executed',
  'cancelled',
  'approval_required',
  'approval_refused',
  'input_required',
  'input_refused',
  'outbound_refused',
  'held_for_review',
];

/** An OAuth sign-in to an agent endpoint waiting for the owner's decision (never a code, cookie or nonce). */
export function signInRequest() {
  return shape({
    id: str,
    agent: shape({ id: str, name: str }),
    /** The client: its metadata document URL (its id), the name that document gives (nobody verified it) and its host. */
    client: shape({ id: str, name: anyStr, nameVerified: constant(false), host: str }),
    redirectUri: str,
    redirectHost: str,
    resource: str,
    createdAt: str,
    expiresAt: str,
  });
}

/** ListAgentTools: the agent's enabled documents with their contracts, index, listing, lambdas and provider formats. */
export const agentToolsAnswer = {
  agent: str,
  version: int,
  tools,
  conflicts: list(shape({ name: str, server: str, heldBy: str })),
  lambdas: list(written<NonNullable<AgentToolsReply['lambdas']>[number]>()),
  index: anyStr,
  listing: anyStr,
  providerTools: shape(providerTools),
  /** Present when `requested` was: the admitted names, in request order, and their provider formats. */
  promoted: optional(shape({ names: list(str), ...providerTools })),
};

/** SearchTools: tools found by meaning, grouped by family. */
export const searchAnswer = {
  families: list(
    shape({
      family: str,
      server: str,
      tools: list(shape({ name: str, description: optional(anyStr), score: num, cid: str })),
    }),
  ),
};
