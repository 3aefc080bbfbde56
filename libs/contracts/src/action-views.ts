import type { ContractDiff, ContractWarning, ToolContract } from '@mcpx/domain';
import { component } from './action-components.js';
import { CALL_OUTCOMES } from './activity.js';
import { InputStatuses, type InputRequestItem } from './inputs.js';
import { serverStatus } from './payload-decoders.js';
import { Transports } from './payloads.js';
import {
  anything,
  anyStr,
  bool,
  count,
  int,
  list,
  num,
  oneOf,
  optional,
  orNull,
  shape,
  str,
  written,
  type Rule,
  type Shaped,
} from './field-rules.js';

/**
 * The views the action API answers with, each defined once as a field-rule table: its TypeScript
 * type is the value the table checks (`Shaped`), and its schema in the OpenAPI document is the
 * table's. The registry writes them; the CLI and the console read them by these types.
 */

const era = oneOf('modern', 'legacy');
const permission = oneOf('act', 'always_ask');
const pin = oneOf('off', 'review', 'strict');

/** A pre-registered OAuth client as responses show it: whether a secret or key is set, never either. */
const redactedOAuthClientTable = {
  clientId: str,
  grant: oneOf('authorization_code', 'client_credentials'),
  hasClientSecret: bool,
  hasPrivateKey: bool,
  keyAlg: optional(str),
  scope: optional(anyStr),
};
export type RedactedOAuthClient = Shaped<typeof redactedOAuthClientTable>;

/** One entry of RedactedMcpServer.tools. */
const redactedToolTable = {
  name: str,
  toolName: str,
  description: optional(anyStr),
  inputSchema: optional(anything),
  /** The effective permission: the owner's override, else the one inherited from annotations. */
  permission: optional(permission),
  /** True when `permission` is the owner's override rather than the inherited level. */
  permissionOverridden: optional(bool),
  /** The level the tool inherits (from its annotations, or for a built-in its name): what `null` goes back to. */
  inheritedPermission: permission,
};
export type RedactedTool = Shaped<typeof redactedToolTable>;

/** An mcp_servers record as any response shows it: never a secret value. */
const redactedServerTable = {
  id: str,
  name: str,
  url: str,
  transport: orNull(oneOf(Transports.http, Transports.sse)),
  headerNames: list(str),
  secretHeaderNames: list(str),
  hasSecrets: bool,
  /** How the server authenticates (the stored method, else derived from its headers). */
  auth: optional(oneOf('oauth', 'bearer', 'headers', 'none')),
  /** `auth: 'oauth'` with a pre-registered client (`config.oauth`). */
  oauthClient: optional(shape(redactedOAuthClientTable)),
  /** A built-in server (docs/servers.md#built-in-servers): no row of its own, its credential lent by a vendor connection. */
  builtin: optional(bool),
  /** The protocol era the server speaks, from its recorded era verdict (absent until one is recorded). */
  era: optional(era),
  /** The protocol version negotiated with the server (e.g. `2026-07-28`), from the same verdict. */
  protocolVersion: optional(str),
  tools: list(shape(redactedToolTable)),
  status: serverStatus,
  /** Contract pinning (`config.pin`): `off`, `review` or `strict`. */
  pin: optional(pin),
  /** Tool changes waiting for review (`ListToolChanges`); present on pinned servers. */
  pendingReviews: optional(count),
  createdAt: str,
  updatedAt: str,
};
export type RedactedMcpServer = Shaped<typeof redactedServerTable>;
export const redactedServer = component('RedactedMcpServer', shape(redactedServerTable));

/** One recorded call of the call log (docs/activity.md): metadata only, never an argument or a result. */
const callViewTable = {
  id: str,
  /** When the call arrived at the proxy (ISO 8601). */
  at: str,
  agent: shape({ id: str, name: optional(str) }),
  run: str,
  callId: str,
  /** Absent when the call was refused before its tool was found. */
  server: optional(str),
  tool: str,
  /** `ok` or the error code the caller got. */
  code: str,
  outcome: oneOf(...CALL_OUTCOMES),
  durationMs: int,
  era: optional(era),
  approvalId: optional(str),
  inputRequestId: optional(str),
  taskId: optional(str),
};
export type CallView = Shaped<typeof callViewTable>;
export const callView = component('CallView', shape(callViewTable));

/** A server's calls over one window. `errorRate` is failed calls (any outcome but `ok`) over calls; the percentiles are of every call's duration. */
const callFiguresTable = {
  calls: count,
  failed: count,
  errorRate: num,
  p50Ms: orNull(int),
  p95Ms: orNull(int),
};
export type CallFigures = Shaped<typeof callFiguresTable>;
export const callFigures: Rule<CallFigures> = component('CallFigures', shape(callFiguresTable));

/** Per server, over the last hour and the last 24 hours. */
const serverCallFiguresTable = { server: str, lastHour: callFigures, lastDay: callFigures };
export type ServerCallFigures = Shaped<typeof serverCallFiguresTable>;
export const serverCallFigures = shape(serverCallFiguresTable);

/** The call a person is asked about (an approval, an input request): its agent, run and tool. */
const heldCall = { id: str, agent: str, run: str, tool: str, server: str, remoteName: str };

/** An approval as `ListApprovals`, `ApproveToolCall` and `DenyToolCall` show it. */
const approvalViewTable = {
  ...heldCall,
  argsHash: str,
  /**
   * The call's arguments, when small enough to show (absent when they were too big): canonical, as
   * kept for display (every object's keys sorted, in this order), so a client shows them as they come.
   */
  arguments: optional(anything),
  status: oneOf('pending', 'approved', 'denied', 'used'),
  createdAt: str,
  /** While pending, the deadline for a decision (creation + TTL); once approved, for re-sending the call (decision + TTL). */
  expiresAt: str,
  decidedAt: optional(str),
  decidedBy: optional(str),
};
export type ApprovalView = Shaped<typeof approvalViewTable>;
export const approvalView = component('ApprovalView', shape(approvalViewTable));

/** An input request as `ListInputRequests` and `AnswerInputRequest` show it. */
const inputRequestViewTable = {
  ...heldCall,
  /** 1 for the call's first question, one more for each round the server asks again. */
  round: int,
  /** `modern` (an `input_required` result) or `legacy` (the server pushed `elicitation/create` during the call). */
  era,
  requests: list(written<InputRequestItem>()),
  status: oneOf(...Object.values(InputStatuses)),
  /** Keys a person already answered (their content is never listed back). */
  answered: list(str),
  createdAt: str,
  expiresAt: str,
  answeredAt: optional(str),
  answeredBy: optional(str),
};
export type InputRequestView = Shaped<typeof inputRequestViewTable>;
export const inputRequestView = component('InputRequestView', shape(inputRequestViewTable));

/** One held change of a pinned server as `ListToolChanges` shows it. */
const toolChangeViewTable = {
  server: str,
  /** The remote tool name. */
  tool: str,
  /** The name agents know it by. */
  toolName: str,
  kind: oneOf('new', 'changed'),
  status: oneOf('pending', 'rejected'),
  /** The held contract's CID: what `AcceptToolChange` names. */
  cid: str,
  previousCid: optional(str),
  /** Agents keep the accepted contract meanwhile (review mode, compatible input); else the tool is withheld. */
  withheld: bool,
  compatible: bool,
  /** Why the new input schema is not compatible with the accepted one. */
  incompatibility: optional(list(anyStr)),
  /** The CID of the document agents will get once it is accepted. */
  documentCid: optional(str),
  pin: oneOf('review', 'strict'),
  detectedAt: str,
  decidedBy: optional(str),
  decidedAt: optional(str),
  before: optional(written<ToolContract>()),
  after: written<ToolContract>(),
  diff: written<ContractDiff>(),
  /** What a reviewer should look at (never used to decide). */
  warnings: list(written<ContractWarning>()),
};
export type ToolChangeView = Shaped<typeof toolChangeViewTable>;
export const toolChangeView = component('ToolChangeView', shape(toolChangeViewTable));

/** One entry of the account's audit log as `ListAuditEvents` shows it (never a secret). */
const auditEventViewTable = {
  id: str,
  at: str,
  signer: str,
  role: str,
  action: str,
  target: shape({ kind: str, name: str }),
  before: optional(anything),
  after: optional(anything),
};
export type AuditEventView = Shaped<typeof auditEventViewTable>;
export const auditEventView = component('AuditEventView', shape(auditEventViewTable));
