import { ActionTypes, type ActionType } from './api.js';
export type { ActionSpec } from './action-parts.js';
import {
  agentDefinition,
  agentRef,
  agentTokenView,
  agentTokenViewFields,
  agentView,
  LIST_MAX,
  name,
  role,
  serverConfig,
  token,
} from './action-components.js';
import {
  ALL,
  OWNER,
  WRITERS,
  discovered,
  invokeErrors,
  level,
  names,
  nothing,
  providerTools,
  signInRequest,
  agentToolsAnswer,
  approvalDecision,
  reviewDecision,
  searchAnswer,
  type ActionSpec,
} from './action-parts.js';
import * as R from './field-rules.js';
import type { ProxyResult } from '@mcpx/domain';
import {
  approvalView,
  auditEventView,
  callView,
  inputRequestView,
  redactedServer,
  serverCallFigures,
  toolChangeView,
} from './action-views.js';
import { CALL_OUTCOME_FILTERS } from './activity.js';
import { TASK_ACTIONS } from './action-tasks.js';
import * as F from './action-fields.js';

/** Every action: the one list the registry dispatches and the OpenAPI document describes. */
export const ACTION_MAP = {
  ListMcpServers: {
    summary: "The account's remote MCP servers, redacted (an AGENT signer: its agents' servers)",
    roles: ALL,
    request: nothing,
    response: { servers: R.list(redactedServer) },
  },
  SetMcpServer: {
    summary: 'Creates or replaces a remote MCP server and discovers its tools',
    roles: WRITERS,
    request: { name: R.anyStr, config: serverConfig },
    response: {
      ...discovered,
      /** What moving the server to another origin dropped (names only, never values): headers to give again, and whether OAuth starts over. */
      droppedSecrets: R.optional(R.shape({ headers: R.list(R.str), oauth: R.bool })),
    },
    errors: ['quota_exceeded', 'conflict'],
  },
  RefreshMcpServer: {
    summary: "Discovers a server's tools again",
    roles: WRITERS,
    request: { name },
    response: discovered,
    errors: ['not_found', 'quota_exceeded'],
  },
  DeleteMcpServer: {
    summary: 'Deletes a server; it leaves every grant',
    roles: WRITERS,
    request: { name },
    response: { name: R.str },
    errors: ['not_found'],
  },
  AuthorizeMcpServer: {
    summary: 'A fresh OAuth authorization URL for a server with config.auth oauth',
    roles: WRITERS,
    request: { name },
    response: discovered,
    errors: ['not_found', 'conflict'],
  },
  CreateAgent: {
    summary: 'Creates an agent granted servers',
    roles: WRITERS,
    request: { name: R.anyStr, definition: R.optional(agentDefinition) },
    response: { agent: agentView },
    errors: ['conflict', 'quota_exceeded'],
  },
  UpdateAgent: {
    summary: "Replaces an agent's definition",
    roles: WRITERS,
    request: { agent: agentRef, definition: R.optional(agentDefinition) },
    response: { agent: agentView },
    errors: ['not_found'],
  },
  GetAgent: {
    summary: 'One agent',
    roles: ALL,
    request: { agent: agentRef },
    response: { agent: agentView },
    errors: ['not_found'],
  },
  ListAgents: {
    summary: "The account's agents (an AGENT signer: its own)",
    roles: ALL,
    request: nothing,
    response: { agents: R.list(agentView) },
  },
  ListAgentTools: {
    summary: "An agent's projected tools",
    roles: ALL,
    /** With `requested`, the answer has the names the promotion rule admits (`promoted`). */
    request: { agent: agentRef, requested: R.optional(names) },
    response: agentToolsAnswer,
    errors: ['not_found'],
  },
  InvokeTool: {
    summary: 'One call through the proxy; without run the run ends at once',
    roles: ALL,
    request: {
      agent: agentRef,
      tool: R.text(256),
      arguments: R.absentOrNull(R.anyMap),
      run: R.absentOrNull(F.runId),
      approvalId: R.absentOrNull(R.text(128)),
      inputRequestId: R.absentOrNull(F.inputRequestId),
      timeoutMs: R.absentOrNull(R.num),
    },
    response: { result: R.written<ProxyResult>(), run: R.str },
    errors: invokeErrors,
  },
  EndRun: {
    summary: "Ends one of the account's runs; every proxy closes its connections",
    roles: ALL,
    request: { run: F.runId },
    response: { run: R.str, ended: R.constant(true) },
  },
  PromoteTools: {
    summary: 'The admitted names and their provider tool formats',
    roles: ALL,
    request: { agent: agentRef, names },
    response: { agent: R.str, version: R.int, names: R.list(R.str), ...providerTools },
    errors: ['not_found'],
  },
  SearchTools: {
    summary: 'Tools found by meaning, grouped by family',
    roles: ALL,
    request: {
      query: R.anyStr,
      family: R.absentOrNull(R.anyStr),
      agent: R.absentOrNull(agentRef),
      limit: R.absentOrNull(R.int),
    },
    response: searchAnswer,
  },
  SetLambdaTool: {
    summary: 'Sets a lambda tool document on an agent',
    roles: ALL,
    request: { agent: agentRef, name: R.anyStr, document: R.anyMap },
    response: { name: R.str, cid: R.str, version: R.int },
    errors: ['conflict', 'not_found'],
  },
  DeleteLambdaTool: {
    summary: 'Deletes a lambda tool of an agent',
    roles: ALL,
    request: { agent: agentRef, name: R.text(256) },
    response: { name: R.str, version: R.int },
    errors: ['conflict', 'not_found'],
  },
  AuthorizeSigner: {
    summary: 'Lets a key act for the account with a role',
    roles: OWNER,
    request: { principal: R.text(64), role, agents: R.optional(R.list(R.anyStr, LIST_MAX)) },
    response: { signer: R.shape({ principal: R.str, role, agents: R.optional(R.list(R.str)) }) },
  },
  RevokeSigner: {
    summary: 'The key may no longer act for the account',
    roles: OWNER,
    request: { principal: R.text(64) },
    response: { revoked: R.bool },
  },
  SetToolPermission: {
    summary: "A tool's permission level (null: inherited)",
    roles: OWNER,
    request: { server: F.serverRef, tool: F.remoteTool, permission: R.orNull(level) },
    /** The tool's effective level, the level it inherits, and whether the owner overrode it. */
    response: { server: R.str, tool: R.str, permission: level, inherited: level, overridden: R.bool },
    errors: ['not_found'],
  },
  ListApprovals: {
    summary: "The account's pending approvals, oldest first",
    roles: WRITERS,
    request: nothing,
    response: { approvals: R.list(approvalView) },
  },
  ApproveToolCall: approvalDecision('Approves an always_ask call; the runtime re-sends it'),
  DenyToolCall: approvalDecision('Denies an always_ask call'),
  ListToolChanges: {
    summary: "A pinned server's held tool changes with diffs and warnings",
    roles: WRITERS,
    request: { server: R.optional(F.serverRef), status: R.optional(R.oneOf('pending', 'rejected', 'all')) },
    response: { changes: R.list(toolChangeView) },
  },
  AcceptToolChange: reviewDecision('The held contract becomes the accepted one'),
  RejectToolChange: reviewDecision('The change stays held and is not asked about again'),
  ListAuditEvents: {
    summary: 'The audit log: who changed what, when',
    roles: OWNER,
    request: {
      limit: R.optional(R.int),
      cursor: R.optional(token),
      action: R.optional(name),
      targetKind: R.optional(name),
      target: R.optional(token),
      signer: R.optional(name),
      since: R.optional(token),
      until: R.optional(token),
    },
    response: { events: R.list(auditEventView), nextCursor: R.optional(R.str) },
  },
  ListInputRequests: {
    summary: "The account's input requests waiting for a person",
    roles: WRITERS,
    request: nothing,
    response: { inputRequests: R.list(inputRequestView) },
  },
  AnswerInputRequest: {
    summary: "Answers a server's question; the runtime re-sends the call",
    roles: OWNER,
    /** `inputRequestId` is read as the id when `id` is absent. */
    request: {
      id: R.optional(F.inputRequestId),
      action: R.oneOf('accept', 'decline', 'cancel'),
      content: R.absentOrNull(R.anyMap),
      key: R.absentOrNull(R.text(256)),
      inputRequestId: R.optional(F.inputRequestId),
    },
    response: { inputRequest: inputRequestView },
    errors: ['not_found', 'input_refused'],
  },
  SetVendorConnection: {
    summary: "Lights up a vendor's built-in servers with its token",
    roles: WRITERS,
    request: { vendor: R.text(64), accessToken: R.str, refreshToken: R.optional(R.str), expiresAt: R.optional(token) },
    response: { vendor: R.str, servers: R.list(redactedServer) },
  },
  DeleteVendorConnection: {
    summary: "The vendor's built-ins go dark and leave every grant",
    roles: WRITERS,
    request: { vendor: R.text(64) },
    response: { vendor: R.str, servers: R.list(R.str) },
    errors: ['not_found'],
  },
  CreateAgentToken: {
    summary: "A bearer token of the agent's MCP endpoint, shown this once",
    roles: OWNER,
    request: {
      agent: agentRef,
      name: R.absentOrNull(F.agentTokenName),
      expiresInDays: R.absentOrNull(R.num),
      userMayApprove: R.absentOrNull(R.bool),
    },
    /** The token is in this answer and nowhere else. */
    response: { ...agentTokenViewFields, token: R.str },
    errors: ['not_found', 'quota_exceeded'],
  },
  ListAgentTokens: {
    summary: "An agent's endpoint tokens (never a token or its hash)",
    roles: OWNER,
    request: { agent: agentRef },
    response: { agent: R.str, tokens: R.list(agentTokenView) },
    errors: ['not_found'],
  },
  RevokeAgentToken: {
    summary: 'The endpoint refuses the token from then on',
    roles: OWNER,
    request: { id: F.agentTokenId },
    response: { id: R.str, revoked: R.bool },
    errors: ['not_found'],
  },
  ListSignInRequests: {
    summary: "OAuth sign-ins to the account's agent endpoints waiting for a decision",
    roles: OWNER,
    request: nothing,
    response: { signIns: R.list(signInRequest()) },
  },
  DecideSignIn: {
    summary: 'Approves or denies an OAuth sign-in; the browser that started it opens continueUrl',
    roles: OWNER,
    request: { id: R.text(128), decision: R.oneOf('approve', 'deny') },
    response: { id: R.str, decision: R.oneOf('approve', 'deny'), continueUrl: R.str },
    errors: ['not_found', 'conflict'],
  },
  ListCalls: {
    summary: "The account's recorded calls (metadata only), newest first, filtered and paged",
    roles: WRITERS,
    /** Newest first; `agent` by id or name, `since`/`until` ISO 8601 times, `cursor` from the previous page. */
    request: {
      agent: R.optional(R.describe(F.filterText, { description: 'An agent id or name' })),
      server: R.optional(F.filterText),
      tool: R.optional(F.filterText),
      outcome: R.optional(R.oneOf(...CALL_OUTCOME_FILTERS)),
      since: R.optional(F.isoTime),
      until: R.optional(F.isoTime),
      limit: R.optional(F.callPageSize),
      cursor: R.optional(F.callCursor),
    },
    response: { calls: R.list(callView), nextCursor: R.optional(R.str) },
  },
  GetCallFigures: {
    summary: 'Per server: calls, error rate, p50 and p95 duration over the last hour and 24 hours',
    roles: WRITERS,
    request: { server: R.optional(F.filterText) },
    response: { at: R.str, servers: R.list(serverCallFigures) },
  },
  // Brokered tasks (docs/tasks.md#people): ./action-tasks.ts.
  ...TASK_ACTIONS,
} as const satisfies { readonly [T in ActionType]: ActionSpec };

/** The action types, in the map's order. */
export const ACTION_TYPES = Object.keys(ActionTypes) as ActionType[];
