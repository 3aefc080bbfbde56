import type { ContractDiff, ContractWarning, ToolContract } from '@mcpx/domain';
import { component } from './action-components.js';
import { CALL_OUTCOMES } from './activity.js';
import { InputStatuses, type InputRequestItem } from './inputs.js';
import { serverStatus } from './payload-decoders.js';
import { Transports } from './payloads.js';
import * as R from './field-rules.js';

/**
 * The views the action API answers with, each defined once as a field-rule table: its TypeScript
 * type is the value the table checks (`Shaped`), and its schema in the OpenAPI document is the
 * table's. The registry writes them; the CLI and the console read them by these types.
 */

const era = R.oneOf('modern', 'legacy');
const permission = R.oneOf('act', 'always_ask');
const pin = R.oneOf('off', 'review', 'strict');

/** A pre-registered OAuth client as responses show it: whether a secret or key is set, never either. */
const redactedOAuthClientTable = {
  clientId: R.str,
  grant: R.oneOf('authorization_code', 'client_credentials'),
  hasClientSecret: R.bool,
  hasPrivateKey: R.bool,
  keyAlg: R.optional(R.str),
  scope: R.optional(R.anyStr),
};
export type RedactedOAuthClient = R.Shaped<typeof redactedOAuthClientTable>;

/** One entry of RedactedMcpServer.tools. */
const redactedToolTable = {
  name: R.str,
  toolName: R.str,
  description: R.optional(R.anyStr),
  inputSchema: R.optional(R.anything),
  /** The effective permission: the owner's override, else the one inherited from annotations. */
  permission: R.optional(permission),
  /** True when `permission` is the owner's override rather than the inherited level. */
  permissionOverridden: R.optional(R.bool),
  /** The level the tool inherits (from its annotations, or for a built-in its name): what `null` goes back to. */
  inheritedPermission: permission,
};
export type RedactedTool = R.Shaped<typeof redactedToolTable>;

/** An mcp_servers record as any response shows it: never a secret value. */
const redactedServerTable = {
  id: R.str,
  name: R.str,
  url: R.str,
  transport: R.orNull(R.oneOf(Transports.http, Transports.sse)),
  headerNames: R.list(R.str),
  secretHeaderNames: R.list(R.str),
  hasSecrets: R.bool,
  /** How the server authenticates (the stored method, else derived from its headers). */
  auth: R.optional(R.oneOf('oauth', 'bearer', 'headers', 'none')),
  /** `auth: 'oauth'` with a pre-registered client (`config.oauth`). */
  oauthClient: R.optional(R.shape(redactedOAuthClientTable)),
  /** A built-in server (docs/servers.md#built-in-servers): no row of its own, its credential lent by a vendor connection. */
  builtin: R.optional(R.bool),
  /** The protocol era the server speaks, from its recorded era verdict (absent until one is recorded). */
  era: R.optional(era),
  /** The protocol version negotiated with the server (e.g. `2026-07-28`), from the same verdict. */
  protocolVersion: R.optional(R.str),
  tools: R.list(R.shape(redactedToolTable)),
  status: serverStatus,
  /** Contract pinning (`config.pin`): `off`, `review` or `strict`. */
  pin: R.optional(pin),
  /** Tool changes waiting for review (`ListToolChanges`); present on pinned servers. */
  pendingReviews: R.optional(R.count),
  createdAt: R.str,
  updatedAt: R.str,
};
export type RedactedMcpServer = R.Shaped<typeof redactedServerTable>;
export const redactedServer = component('RedactedMcpServer', R.shape(redactedServerTable));

/** One recorded call of the call log (docs/activity.md): metadata only, never an argument or a result. */
const callViewTable = {
  id: R.str,
  /** When the call arrived at the proxy (ISO 8601). */
  at: R.str,
  agent: R.shape({ id: R.str, name: R.optional(R.str) }),
  run: R.str,
  callId: R.str,
  /** Absent when the call was refused before its tool was found. */
  server: R.optional(R.str),
  tool: R.str,
  /** `ok` or the error code the caller got. */
  code: R.str,
  outcome: R.oneOf(...CALL_OUTCOMES),
  durationMs: R.int,
  era: R.optional(era),
  approvalId: R.optional(R.str),
  inputRequestId: R.optional(R.str),
  taskId: R.optional(R.str),
};
export type CallView = R.Shaped<typeof callViewTable>;
export const callView = component('CallView', R.shape(callViewTable));

/** A server's calls over one window. `errorRate` is failed calls (any outcome but `ok`) over calls; the percentiles are of every call's duration. */
const callFiguresTable = {
  calls: R.count,
  failed: R.count,
  errorRate: R.num,
  p50Ms: R.orNull(R.int),
  p95Ms: R.orNull(R.int),
};
export type CallFigures = R.Shaped<typeof callFiguresTable>;
export const callFigures: R.Rule<CallFigures> = component('CallFigures', R.shape(callFiguresTable));

/** Per server, over the last hour and the last 24 hours. */
const serverCallFiguresTable = { server: R.str, lastHour: callFigures, lastDay: callFigures };
export type ServerCallFigures = R.Shaped<typeof serverCallFiguresTable>;
export const serverCallFigures = R.shape(serverCallFiguresTable);

/** The call a person is asked about (an approval, an input request): its agent, run and tool. */
const heldCall = { id: R.str, agent: R.str, run: R.str, tool: R.str, server: R.str, remoteName: R.str };

/** An approval as `ListApprovals`, `ApproveToolCall` and `DenyToolCall` show it. */
const approvalViewTable = {
  ...heldCall,
  argsHash: R.str,
  /**
   * The call's arguments, when small enough to show (absent when they were too big): canonical, as
   * kept for display (every object's keys sorted, in this order), so a client shows them as they come.
   */
  arguments: R.optional(R.anything),
  status: R.oneOf('pending', 'approved', 'denied', 'used'),
  createdAt: R.str,
  /** While pending, the deadline for a decision (creation + TTL); once approved, for re-sending the call (decision + TTL). */
  expiresAt: R.str,
  decidedAt: R.optional(R.str),
  decidedBy: R.optional(R.str),
};
export type ApprovalView = R.Shaped<typeof approvalViewTable>;
export const approvalView = component('ApprovalView', R.shape(approvalViewTable));

/** An input request as `ListInputRequests` and `AnswerInputRequest` show it. */
const inputRequestViewTable = {
  ...heldCall,
  /** 1 for the call's first question, one more for each round the server asks again. */
  round: R.int,
  /** `modern` (an `input_required` result) or `legacy` (the server pushed `elicitation/create` during the call). */
  era,
  requests: R.list(R.written<InputRequestItem>()),
  status: R.oneOf(...Object.values(InputStatuses)),
  /** Keys a person already answered (their content is never listed back). */
  answered: R.list(R.str),
  createdAt: R.str,
  expiresAt: R.str,
  answeredAt: R.optional(R.str),
  answeredBy: R.optional(R.str),
};
export type InputRequestView = R.Shaped<typeof inputRequestViewTable>;
export const inputRequestView = component('InputRequestView', R.shape(inputRequestViewTable));

/** One held change of a pinned server as `ListToolChanges` shows it. */
const toolChangeViewTable = {
  server: R.str,
  /** The remote tool name. */
  tool: R.str,
  /** The name agents know it by. */
  toolName: R.str,
  kind: R.oneOf('new', 'changed'),
  status: R.oneOf('pending', 'rejected'),
  /** The held contract's CID: what `AcceptToolChange` names. */
  cid: R.str,
  previousCid: R.optional(R.str),
  /** Agents keep the accepted contract meanwhile (review mode, compatible input); else the tool is withheld. */
  withheld: R.bool,
  compatible: R.bool,
  /** Why the new input schema is not compatible with the accepted one. */
  incompatibility: R.optional(R.list(R.anyStr)),
  /** The CID of the document agents will get once it is accepted. */
  documentCid: R.optional(R.str),
  pin: R.oneOf('review', 'strict'),
  detectedAt: R.str,
  decidedBy: R.optional(R.str),
  decidedAt: R.optional(R.str),
  before: R.optional(R.written<ToolContract>()),
  after: R.written<ToolContract>(),
  diff: R.written<ContractDiff>(),
  /** What a reviewer should look at (never used to decide). */
  warnings: R.list(R.written<ContractWarning>()),
};
export type ToolChangeView = R.Shaped<typeof toolChangeViewTable>;
export const toolChangeView = component('ToolChangeView', R.shape(toolChangeViewTable));

/** One entry of the account's audit log as `ListAuditEvents` shows it (never a secret). */
const auditEventViewTable = {
  id: R.str,
  at: R.str,
  signer: R.str,
  role: R.str,
  action: R.str,
  target: R.shape({ kind: R.str, name: R.str }),
  before: R.optional(R.anything),
  after: R.optional(R.anything),
};
export type AuditEventView = R.Shaped<typeof auditEventViewTable>;
export const auditEventView = component('AuditEventView', R.shape(auditEventViewTable));
