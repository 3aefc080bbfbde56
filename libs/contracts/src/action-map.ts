import { ActionTypes, type ActionType } from './api.js';
export type { ActionSpec } from './action-parts.js';
import {
  agentDefinition,
  agentRef,
  agentTokenView,
  agentTokenViewFields,
  agentView,
  callFigures,
  callView,
  LIST_MAX,
  name,
  redactedServer,
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
  review,
  reviewed,
  signInRequest,
  agentToolsAnswer,
  searchAnswer,
  type ActionSpec,
} from './action-parts.js';
import {
  absentOrNull,
  describe,
  anyMap,
  anyStr,
  bool,
  constant,
  int,
  list,
  num,
  oneOf,
  optional,
  orNull,
  shape,
  str,
  text,
  written,
} from './field-rules.js';
import type { ProxyResult } from '@mcpx/domain';
import type { ApprovalView } from './payloads.js';
import type { AuditEventView, ToolChangeView } from './reviews.js';
import type { InputRequestView } from './inputs.js';
import { CALL_OUTCOME_FILTERS } from './activity.js';
import { TASK_ACTIONS } from './action-tasks.js';
import * as F from './action-fields.js';

/** Every action: the one list the registry dispatches and the OpenAPI document describes. */
export const ACTION_MAP = {
  ListMcpServers: {
    summary: "The account's remote MCP servers, redacted (an AGENT signer: its agents' servers)",
    roles: ALL,
    request: nothing,
    response: { servers: list(redactedServer) },
  },
  SetMcpServer: {
    summary: 'Creates or replaces a remote MCP server and discovers its tools',
    roles: WRITERS,
    request: { name: anyStr, config: serverConfig },
    response: {
      ...discovered,
      /** What moving the server to another origin dropped (names only, never values): headers to give again, and whether OAuth starts over. */
      droppedSecrets: optional(shape({ headers: list(str), oauth: bool })),
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
    response: { name: str },
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
    request: { name: anyStr, definition: optional(agentDefinition) },
    response: { agent: agentView },
    errors: ['conflict', 'quota_exceeded'],
  },
  UpdateAgent: {
    summary: "Replaces an agent's definition",
    roles: WRITERS,
    request: { agent: agentRef, definition: optional(agentDefinition) },
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
    response: { agents: list(agentView) },
  },
  ListAgentTools: {
    summary: "An agent's projected tools",
    roles: ALL,
    /** With `requested`, the answer has the names the promotion rule admits (`promoted`). */
    request: { agent: agentRef, requested: optional(names) },
    response: agentToolsAnswer,
    errors: ['not_found'],
  },
  InvokeTool: {
    summary: 'One call through the proxy; without run the run ends at once',
    roles: ALL,
    request: {
      agent: agentRef,
      tool: text(256),
      arguments: absentOrNull(anyMap),
      run: absentOrNull(F.runId),
      approvalId: absentOrNull(text(128)),
      inputRequestId: absentOrNull(F.inputRequestId),
      timeoutMs: absentOrNull(num),
    },
    response: { result: written<ProxyResult>(), run: str },
    errors: invokeErrors,
  },
  EndRun: {
    summary: "Ends one of the account's runs; every proxy closes its connections",
    roles: ALL,
    request: { run: F.runId },
    response: { run: str, ended: constant(true) },
  },
  PromoteTools: {
    summary: 'The admitted names and their provider tool formats',
    roles: ALL,
    request: { agent: agentRef, names },
    response: { agent: str, version: int, names: list(str), ...providerTools },
    errors: ['not_found'],
  },
  SearchTools: {
    summary: 'Tools found by meaning, grouped by family',
    roles: ALL,
    request: { query: anyStr, family: absentOrNull(anyStr), agent: absentOrNull(agentRef), limit: absentOrNull(int) },
    response: searchAnswer,
  },
  SetLambdaTool: {
    summary: 'Sets a lambda tool document on an agent',
    roles: ALL,
    request: { agent: agentRef, name: anyStr, document: anyMap },
    response: { name: str, cid: str, version: int },
    errors: ['conflict', 'not_found'],
  },
  DeleteLambdaTool: {
    summary: 'Deletes a lambda tool of an agent',
    roles: ALL,
    request: { agent: agentRef, name: text(256) },
    response: { name: str, version: int },
    errors: ['conflict', 'not_found'],
  },
  AuthorizeSigner: {
    summary: 'Lets a key act for the account with a role',
    roles: OWNER,
    request: { principal: text(64), role, agents: optional(list(anyStr, LIST_MAX)) },
    response: { signer: shape({ principal: str, role, agents: optional(list(str)) }) },
  },
  RevokeSigner: {
    summary: 'The key may no longer act for the account',
    roles: OWNER,
    request: { principal: text(64) },
    response: { revoked: bool },
  },
  SetToolPermission: {
    summary: "A tool's permission level (null: inherited)",
    roles: OWNER,
    request: { server: F.serverRef, tool: F.remoteTool, permission: orNull(level) },
    /** The tool's effective level, the level it inherits, and whether the owner overrode it. */
    response: { server: str, tool: str, permission: level, inherited: level, overridden: bool },
    errors: ['not_found'],
  },
  ListApprovals: {
    summary: "The account's pending approvals, oldest first",
    roles: WRITERS,
    request: nothing,
    response: { approvals: list(written<ApprovalView>()) },
  },
  ApproveToolCall: {
    summary: 'Approves an always_ask call; the runtime re-sends it',
    roles: OWNER,
    request: { approvalId: F.approvalId },
    response: { approval: written<ApprovalView>() },
    errors: ['not_found', 'conflict'],
  },
  DenyToolCall: {
    summary: 'Denies an always_ask call',
    roles: OWNER,
    request: { approvalId: F.approvalId },
    response: { approval: written<ApprovalView>() },
    errors: ['not_found', 'conflict'],
  },
  ListToolChanges: {
    summary: "A pinned server's held tool changes with diffs and warnings",
    roles: WRITERS,
    request: { server: optional(F.serverRef), status: optional(oneOf('pending', 'rejected', 'all')) },
    response: { changes: list(written<ToolChangeView>()) },
  },
  AcceptToolChange: {
    summary: 'The held contract becomes the accepted one',
    roles: WRITERS,
    request: review,
    response: reviewed,
    errors: ['not_found', 'conflict'],
  },
  RejectToolChange: {
    summary: 'The change stays held and is not asked about again',
    roles: WRITERS,
    request: review,
    response: reviewed,
    errors: ['not_found', 'conflict'],
  },
  ListAuditEvents: {
    summary: 'The audit log: who changed what, when',
    roles: OWNER,
    request: {
      limit: optional(int),
      cursor: optional(token),
      action: optional(name),
      targetKind: optional(name),
      target: optional(token),
      signer: optional(name),
      since: optional(token),
      until: optional(token),
    },
    response: { events: list(written<AuditEventView>()), nextCursor: optional(str) },
  },
  ListInputRequests: {
    summary: "The account's input requests waiting for a person",
    roles: WRITERS,
    request: nothing,
    response: { inputRequests: list(written<InputRequestView>()) },
  },
  AnswerInputRequest: {
    summary: "Answers a server's question; the runtime re-sends the call",
    roles: OWNER,
    /** `inputRequestId` is read as the id when `id` is absent. */
    request: {
      id: optional(F.inputRequestId),
      action: oneOf('accept', 'decline', 'cancel'),
      content: absentOrNull(anyMap),
      key: absentOrNull(text(256)),
      inputRequestId: optional(F.inputRequestId),
    },
    response: { inputRequest: written<InputRequestView>() },
    errors: ['not_found', 'input_refused'],
  },
  SetVendorConnection: {
    summary: "Lights up a vendor's built-in servers with its token",
    roles: WRITERS,
    request: { vendor: text(64), accessToken: str, refreshToken: optional(str), expiresAt: optional(token) },
    response: { vendor: str, servers: list(redactedServer) },
  },
  DeleteVendorConnection: {
    summary: "The vendor's built-ins go dark and leave every grant",
    roles: WRITERS,
    request: { vendor: text(64) },
    response: { vendor: str, servers: list(str) },
    errors: ['not_found'],
  },
  CreateAgentToken: {
    summary: "A bearer token of the agent's MCP endpoint, shown this once",
    roles: OWNER,
    request: {
      agent: agentRef,
      name: absentOrNull(F.agentTokenName),
      expiresInDays: absentOrNull(num),
      userMayApprove: absentOrNull(bool),
    },
    /** The token is in this answer and nowhere else. */
    response: { ...agentTokenViewFields, token: str },
    errors: ['not_found', 'quota_exceeded'],
  },
  ListAgentTokens: {
    summary: "An agent's endpoint tokens (never a token or its hash)",
    roles: OWNER,
    request: { agent: agentRef },
    response: { agent: str, tokens: list(agentTokenView) },
    errors: ['not_found'],
  },
  RevokeAgentToken: {
    summary: 'The endpoint refuses the token from then on',
    roles: OWNER,
    request: { id: F.agentTokenId },
    response: { id: str, revoked: bool },
    errors: ['not_found'],
  },
  ListSignInRequests: {
    summary: "OAuth sign-ins to the account's agent endpoints waiting for a decision",
    roles: OWNER,
    request: nothing,
    response: { signIns: list(signInRequest()) },
  },
  DecideSignIn: {
    summary: 'Approves or denies an OAuth sign-in; the browser that started it opens continueUrl',
    roles: OWNER,
    request: { id: text(128), decision: oneOf('approve', 'deny') },
    response: { id: str, decision: oneOf('approve', 'deny'), continueUrl: str },
    errors: ['not_found', 'conflict'],
  },
  ListCalls: {
    summary: "The account's recorded calls (metadata only), newest first, filtered and paged",
    roles: WRITERS,
    /** Newest first; `agent` by id or name, `since`/`until` ISO 8601 times, `cursor` from the previous page. */
    request: {
      agent: optional(describe(F.filterText, { description: 'An agent id or name' })),
      server: optional(F.filterText),
      tool: optional(F.filterText),
      outcome: optional(oneOf(...CALL_OUTCOME_FILTERS)),
      since: optional(F.isoTime),
      until: optional(F.isoTime),
      limit: optional(F.callPageSize),
      cursor: optional(F.callCursor),
    },
    response: { calls: list(callView), nextCursor: optional(str) },
  },
  GetCallFigures: {
    summary: 'Per server: calls, error rate, p50 and p95 duration over the last hour and 24 hours',
    roles: WRITERS,
    request: { server: optional(F.filterText) },
    response: { at: str, servers: list(shape({ server: str, lastHour: callFigures, lastDay: callFigures })) },
  },
  // Brokered tasks (docs/tasks.md#people): ./action-tasks.ts.
  ...TASK_ACTIONS,
} as const satisfies { readonly [T in ActionType]: ActionSpec };

/** The action types, in the map's order. */
export const ACTION_TYPES = Object.keys(ActionTypes) as ActionType[];
