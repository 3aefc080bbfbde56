import { LIST_MAX, type ActionRole } from './action-components.js';
import { approvalView, redactedServer } from './action-views.js';
import { approvalId, changeCid, remoteTool, serverRef } from './action-fields.js';
import * as R from './field-rules.js';
import type { ErrorCode } from './errors.js';
import type { AgentToolsReply, ProviderToolSet } from './payloads.js';
import { taskViewValue } from './tasks.js';

/**
 * One action of the API, defined once: its request and response as field-rule tables (the
 * dispatcher decodes the request with its table before the handler runs; the TypeScript types
 * `ActionRequests`/`ActionResponses` and the OpenAPI document are derived from both), the roles
 * that may perform it and the codes it answers.
 */
export interface ActionSpec<Q extends R.Table = R.Table, R extends R.Table = R.Table> {
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
export const names = R.list(R.str, LIST_MAX);
export const tools = R.list(R.written<AgentToolsReply['documents'][number]>());
export const providerTools = {
  openai: R.list(R.written<ProviderToolSet['openai'][number]>()),
  anthropic: R.list(R.written<ProviderToolSet['anthropic'][number]>()),
};
export const discovered = {
  server: redactedServer,
  authorizationUrl: R.optional(R.str),
  authorizationError: R.optional(R.str),
};
export const level = R.oneOf('act', 'always_ask');
export const review = { server: serverRef, tool: remoteTool, cid: changeCid };
export const reviewed = {
  server: R.str,
  tool: R.str,
  cid: R.str,
  decision: R.oneOf('accepted', 'rejected'),
  /** Whether agents go without the tool while its change stays held. */
  withheld: R.optional(R.bool),
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
  return R.shape({
    id: R.str,
    agent: R.shape({ id: R.str, name: R.str }),
    /** The client: its metadata document URL (its id), the name that document gives (nobody verified it) and its host. */
    client: R.shape({ id: R.str, name: R.anyStr, nameVerified: R.constant(false), host: R.str }),
    redirectUri: R.str,
    redirectHost: R.str,
    resource: R.str,
    createdAt: R.str,
    expiresAt: R.str,
  });
}

/** ListAgentTools: the agent's enabled documents with their contracts, index, listing, lambdas and provider formats. */
export const agentToolsAnswer = {
  agent: R.str,
  version: R.int,
  tools,
  conflicts: R.list(R.shape({ name: R.str, server: R.str, heldBy: R.str })),
  lambdas: R.list(R.written<NonNullable<AgentToolsReply['lambdas']>[number]>()),
  index: R.anyStr,
  listing: R.anyStr,
  providerTools: R.shape(providerTools),
  /** Present when `requested` was: the admitted names, in request order, and their provider formats. */
  promoted: R.optional(R.shape({ names: R.list(R.str), ...providerTools })),
};

/** SearchTools: tools found by meaning, grouped by family. */
export const searchAnswer = {
  families: R.list(
    R.shape({
      family: R.str,
      server: R.str,
      tools: R.list(R.shape({ name: R.str, description: R.optional(R.anyStr), score: R.num, cid: R.str })),
    }),
  ),
};

/** ApproveToolCall and DenyToolCall: the owner's decision on one approval. */
export function approvalDecision(summary: string) {
  const errors: readonly ErrorCode[] = ['not_found', 'conflict'];
  return { summary, roles: OWNER, request: { approvalId }, response: { approval: approvalView }, errors };
}

/** AcceptToolChange and RejectToolChange: a reviewer's decision on one held change. */
export function reviewDecision(summary: string) {
  const errors: readonly ErrorCode[] = ['not_found', 'conflict'];
  return { summary, roles: WRITERS, request: review, response: reviewed, errors };
}
