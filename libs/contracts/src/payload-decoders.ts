import type { RemoteTool } from '@mcpx/domain';
import { decodeStrict } from './codec.js';
import { invalidInput } from './errors.js';
import type { InputAnsweredEvent, InputRequestedEvent } from './inputs.js';
import type { OAuthRefreshRequest } from './oauth-refresh.js';
import type {
  AgentChangedEvent,
  AgentToolsChangedEvent,
  ApprovalDecidedEvent,
  ApprovalRequestedEvent,
  ProxyCancel,
  RunEnded,
  ServerDeletedEvent,
  ServerDiscoveredEvent,
  ToolsObserved,
} from './payloads.js';

/**
 * Decoders of the NATS payloads the services subscribe to: strict decoding (`decodeStrict`),
 * then the payload's shape, field by field. Each throws only an `invalid_input` WireError naming
 * the payload (a rule of the decoder, or "must be a map") or the first malformed field, and
 * returns a value whose checked fields have their declared types, so a consumer can use them
 * without a check of its own and no malformed message reaches its logic.
 */

type Fields = Record<string, unknown>;

function isMap(v: unknown): v is Fields {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

function map(bytes: Uint8Array, payload: string): Fields {
  const v = decodeStrict(bytes, payload);
  if (!isMap(v)) throw invalidInput(payload, 'must be a map');
  return v;
}

function str(r: Fields, field: string): string {
  const v = r[field];
  if (typeof v !== 'string' || v === '') throw invalidInput(field, 'must be a non-empty string');
  return v;
}

function anyStr(r: Fields, field: string): void {
  if (typeof r[field] !== 'string') throw invalidInput(field, 'must be a string');
}

function optStr(r: Fields, field: string): void {
  if (r[field] !== undefined && typeof r[field] !== 'string') throw invalidInput(field, 'must be a string');
}

function int(r: Fields, field: string): number {
  const v = r[field];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidInput(field, 'must be an integer');
  return v;
}

function strings(r: Fields, field: string): string[] {
  const v = r[field];
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw invalidInput(field, 'must be a list of strings');
  return v;
}

function stringMap(r: Fields, field: string, optional = false): void {
  const v = r[field];
  if (optional && v === undefined) return;
  if (!isMap(v) || !Object.values(v).every((s) => typeof s === 'string')) throw invalidInput(field, 'must be a map of strings');
}

/** A remote tool as the projector and the registry read it: a name, optional texts and maps. */
function tools(r: Fields, field: string): RemoteTool[] {
  const v = r[field];
  if (!Array.isArray(v)) throw invalidInput(field, 'must be a list');
  v.forEach((t: unknown, i) => {
    if (!isMap(t) || typeof t.name !== 'string' || t.name === '') throw invalidInput(`${field}[${i}].name`, 'must be a non-empty string');
    for (const k of ['title', 'description']) if (t[k] !== undefined && typeof t[k] !== 'string') throw invalidInput(`${field}[${i}].${k}`, 'must be a string');
    if (t.annotations !== undefined && !isMap(t.annotations)) throw invalidInput(`${field}[${i}].annotations`, 'must be a map');
  });
  return v as RemoteTool[];
}

/** `registry.oauth.refresh`. */
export function decodeOAuthRefreshRequest(bytes: Uint8Array): OAuthRefreshRequest {
  const r = map(bytes, 'oauthRefresh');
  str(r, 'account');
  str(r, 'server');
  optStr(r, 'staleTokenHash');
  return r as unknown as OAuthRefreshRequest;
}

/** `mcp.proxy.cancel` and `mcp.proxy.calls.held` (both name one call). */
export function decodeProxyCancel(bytes: Uint8Array): ProxyCancel {
  const r = map(bytes, 'cancel');
  str(r, 'account');
  str(r, 'run');
  str(r, 'callId');
  return r as unknown as ProxyCancel;
}

/** `mcp.runs.ended.<acct>.<run>`. */
export function decodeRunEnded(bytes: Uint8Array): RunEnded {
  const r = map(bytes, 'runEnded');
  str(r, 'account');
  str(r, 'run');
  return r as unknown as RunEnded;
}

/** `mcp.proxy.tools.observed`. */
export function decodeToolsObserved(bytes: Uint8Array): ToolsObserved {
  const r = map(bytes, 'toolsObserved');
  str(r, 'account');
  str(r, 'server');
  tools(r, 'tools');
  if (r.transport !== 'http' && r.transport !== 'sse') throw invalidInput('transport', 'must be http or sse');
  return r as unknown as ToolsObserved;
}

/** `mcp.events.server.discovered.<acct>.<server>`. */
export function decodeServerDiscoveredEvent(bytes: Uint8Array): ServerDiscoveredEvent {
  const r = map(bytes, 'serverDiscovered');
  str(r, 'account');
  str(r, 'server');
  str(r, 'serverId');
  int(r, 'generation');
  tools(r, 'tools');
  if (!isMap(r.status) || typeof r.status.state !== 'string') throw invalidInput('status.state', 'must be a string');
  if (typeof r.toolsChanged !== 'boolean') throw invalidInput('toolsChanged', 'must be a boolean');
  stringMap(r, 'overrides', true);
  if (r.held !== undefined) {
    if (!Array.isArray(r.held)) throw invalidInput('held', 'must be a list');
    r.held.forEach((h: unknown, i) => {
      if (!isMap(h) || typeof h.name !== 'string' || h.name === '' || typeof h.cid !== 'string') throw invalidInput(`held[${i}]`, 'must be {name, cid}');
    });
  }
  return r as unknown as ServerDiscoveredEvent;
}

/** `mcp.events.server.deleted.<acct>.<server>`. */
export function decodeServerDeletedEvent(bytes: Uint8Array): ServerDeletedEvent {
  const r = map(bytes, 'serverDeleted');
  str(r, 'account');
  str(r, 'server');
  str(r, 'serverId');
  return r as unknown as ServerDeletedEvent;
}

/** `mcp.events.agent.changed.<acct>.<agent>`. */
export function decodeAgentChangedEvent(bytes: Uint8Array): AgentChangedEvent {
  const r = map(bytes, 'agentChanged');
  str(r, 'account');
  str(r, 'agent');
  int(r, 'revision');
  strings(r, 'mcpServers');
  if (r.deleted !== undefined && typeof r.deleted !== 'boolean') throw invalidInput('deleted', 'must be a boolean');
  return r as unknown as AgentChangedEvent;
}

/** `agents.tools.changed.<acct>.<agent>`. */
export function decodeAgentToolsChangedEvent(bytes: Uint8Array): AgentToolsChangedEvent {
  const r = map(bytes, 'agentToolsChanged');
  str(r, 'account');
  str(r, 'agent');
  int(r, 'version');
  stringMap(r, 'added');
  stringMap(r, 'changed');
  strings(r, 'removed');
  return r as unknown as AgentToolsChangedEvent;
}

const APPROVAL_FIELDS = ['account', 'approvalId', 'agent', 'run', 'tool', 'server', 'expiresAt'] as const;

/** `mcp.approvals.requested.<acct>`. */
export function decodeApprovalRequestedEvent(bytes: Uint8Array): ApprovalRequestedEvent {
  const r = map(bytes, 'approvalRequested');
  for (const f of APPROVAL_FIELDS) str(r, f);
  str(r, 'remoteName');
  str(r, 'argsHash');
  return r as unknown as ApprovalRequestedEvent;
}

/** `mcp.approvals.decided.<acct>`. */
export function decodeApprovalDecidedEvent(bytes: Uint8Array): ApprovalDecidedEvent {
  const r = map(bytes, 'approvalDecided');
  for (const f of APPROVAL_FIELDS) str(r, f);
  if (r.decision !== 'approved' && r.decision !== 'denied') throw invalidInput('decision', 'must be approved or denied');
  anyStr(r, 'decidedBy');
  str(r, 'decidedAt');
  return r as unknown as ApprovalDecidedEvent;
}

const INPUT_FIELDS = ['account', 'inputRequestId', 'agent', 'run', 'tool', 'server', 'expiresAt'] as const;

/** `mcp.inputs.requested.<acct>`. */
export function decodeInputRequestedEvent(bytes: Uint8Array): InputRequestedEvent {
  const r = map(bytes, 'inputRequested');
  for (const f of INPUT_FIELDS) str(r, f);
  if (typeof r.forPerson !== 'boolean') throw invalidInput('forPerson', 'must be a boolean');
  return r as unknown as InputRequestedEvent;
}

/** `mcp.inputs.answered.<acct>`. */
export function decodeInputAnsweredEvent(bytes: Uint8Array): InputAnsweredEvent {
  const r = map(bytes, 'inputAnswered');
  for (const f of INPUT_FIELDS) str(r, f);
  anyStr(r, 'answeredBy');
  str(r, 'answeredAt');
  return r as unknown as InputAnsweredEvent;
}

/**
 * A request of a request/reply endpoint: strictly decoded and a map (every request is), its
 * fields left to the endpoint's handler.
 */
export function decodeRequest(bytes: Uint8Array, payload = 'payload'): Fields {
  return map(bytes, payload);
}

/**
 * The `{ok, value | error}` reply of a request/reply endpoint. Its `error` is left for
 * `WireError.from`, which turns any shape into a typed error.
 */
export function decodeReply(bytes: Uint8Array): { ok: boolean; value?: unknown; error?: unknown } {
  const r = map(bytes, 'reply');
  if (typeof r.ok !== 'boolean') throw invalidInput('ok', 'must be a boolean');
  return r as { ok: boolean; value?: unknown; error?: unknown };
}
