import { Permission, type RemoteTool } from '@mcpx/domain';
import { invalidInput } from './errors.js';
import {
  anyMap,
  anyStr,
  anything,
  bool,
  count,
  int,
  isMap,
  list,
  mapOf,
  matching,
  num,
  oneOf,
  optional,
  payloadDecoder,
  shape,
  str,
  type Rule,
  type Shaped,
} from './field-rules.js';
import type { InputAnsweredEvent, InputRequestedEvent } from './inputs.js';
import type { OAuthRefreshAnswer, OAuthRefreshRequest } from './oauth-refresh.js';
import { PROGRESS_MESSAGE_MAX_CHARS, ServerStates, Transports } from './payloads.js';
import { REVIEW_CHANGES_MAX, type ToolReviewRequestedEvent } from './reviews.js';
import type {
  AgentChangedEvent,
  AgentToolsChangedEvent,
  ApprovalDecidedEvent,
  ApprovalRequestedEvent,
  CallProgress,
  ProxyCancel,
  RunEnded,
  ServerDeletedEvent,
  ServerDiscoveredEvent,
  ToolsObserved,
} from './payloads.js';
import { decodeStrict } from './codec.js';

/**
 * Decoders of the NATS payloads the services subscribe to: strict decoding (`decodeStrict`),
 * then the payload's table of field rules (`field-rules.ts`). Each throws only an
 * `invalid_input` WireError naming the payload (a rule of the decoder, or "must be a map") or
 * the first malformed field, and returns a new value holding only the fields its table checked,
 * so a consumer can use them without a check of its own and no malformed message reaches its
 * logic. Each decoder is declared with the payload's type, so a table that misses or mistypes a
 * required field does not compile.
 */

const transport = oneOf(Transports.http, Transports.sse);
const permission = oneOf(Permission.act, Permission.always_ask);

/**
 * A remote tool as the projector and the registry read it: a name, optional texts; its schemas and
 * annotations are kept exactly as the server gave them (a document's CID is computed over them,
 * and the inherited level reads a hint only when it is `true`).
 */
const remoteTool: Rule<RemoteTool> = shape({
  name: str,
  title: optional(anyStr),
  description: optional(anyStr),
  inputSchema: anything,
  outputSchema: anything,
  annotations: optional(anyMap),
  // `taskSupport` only (docs/tasks.md): read by the document builder, which keeps `required` or `optional`.
  execution: optional(anyMap),
  // The tool's `_meta` (MCP Apps' `ui.resourceUri`…): the document builder keeps it bounded (`toolMetaOf`).
  _meta: optional(anyMap),
});

/**
 * A tool of a pinned server whose changed or new contract waits for review (`pending`) or was
 * rejected: `withheld` when agents do not have the tool at all (a new tool, an incompatible
 * change, any change under `strict`), else they keep its accepted contract. As a server's status
 * shows it (`ServerStatus.heldTools`); the registry's `held_cbor` column keeps the same (`@mcpx/stored`).
 */
const heldToolStatusTable = {
  /** The remote tool name. */
  name: str,
  /** The held contract's CID. */
  cid: anyStr,
  reason: oneOf('held_for_review'),
  state: oneOf('pending', 'rejected'),
  withheld: bool,
};
export type HeldToolStatus = Shaped<typeof heldToolStatusTable>;
export const heldToolStatus: Rule<HeldToolStatus> = shape(heldToolStatusTable);

/** `status_cbor` of an mcp_servers record, every field of it. Times are ISO-8601 strings. */
const serverStatusTable = {
  state: oneOf(ServerStates.ok, ServerStates.error, ServerStates.authRequired, ServerStates.unknown),
  /** The failure as it came (bounded, scrubbed; never a secret): the detail a person asks for. */
  error: optional(anyStr),
  /**
   * The failure in one line a person understands, with what to try ("the server answered 404 at
   * /mpc; MCP servers usually serve /mcp"); absent when nothing better than `error` can be said.
   */
  summary: optional(anyStr),
  checkedAt: optional(anyStr),
  lastOkAt: optional(anyStr),
  /** The transport the last successful discovery used (recorded when it was found by fallback). */
  transport: optional(transport),
  /** Failed discoveries in a row; drives the background re-probe backoff. */
  failures: optional(int),
  /**
   * No longer written: an authorization is bound to the browser of the signer who asks for it
   * (AuthorizeMcpServer answers a single-use ticket URL). A status recorded earlier may still
   * hold an authorization server's URL, which no longer completes on its own.
   */
  authorizationUrl: optional(anyStr),
  /** The protocol era of the last successful discovery (from its era verdict). */
  era: optional(oneOf('modern', 'legacy')),
  /** The protocol version negotiated by the last successful discovery (e.g. `2026-07-28`). */
  protocolVersion: optional(anyStr),
  /**
   * Tools the server listed that are not projected, each with why (e.g. an invalid
   * `x-mcp-header` annotation): nothing the server offers is silently lost.
   */
  skippedTools: optional(list(shape({ name: anyStr, reason: anyStr }))),
  /**
   * The freshness hints the server gave with its tool list (2026-07-28 `ttlMs`/`cacheScope`):
   * how long the list may be kept, and whether it may serve another auth context (`private`: never).
   */
  listTtlMs: optional(num),
  listCacheScope: optional(oneOf('public', 'private')),
  /** A pinned server (`config.pin`): its held changes, see {@link HeldToolStatus}. */
  heldTools: optional(list(heldToolStatus)),
};
export type ServerStatus = Shaped<typeof serverStatusTable>;
export const serverStatus: Rule<ServerStatus> = shape(serverStatusTable);

/** `registry.oauth.refresh`. */
export const decodeOAuthRefreshRequest: (bytes: Uint8Array) => OAuthRefreshRequest = payloadDecoder('oauthRefresh', {
  account: str,
  server: str,
  staleTokenHash: optional(anyStr),
});

/** `mcp.proxy.cancel` and `mcp.proxy.calls.held` (both name one call). */
export const decodeProxyCancel: (bytes: Uint8Array) => ProxyCancel = payloadDecoder('cancel', {
  account: str,
  run: str,
  callId: str,
});

/** A progress message within {@link PROGRESS_MESSAGE_MAX_CHARS} (the proxy cuts longer ones before it publishes). */
const progressMessage: Rule<string> = (v, field) => {
  const text = anyStr(v, field);
  if (text.length > PROGRESS_MESSAGE_MAX_CHARS)
    throw invalidInput(field, `must be at most ${PROGRESS_MESSAGE_MAX_CHARS} characters`);
  return text;
};

/** `mcp.calls.progress.<acct>.<run>.<callId>`. */
export const decodeCallProgress: (bytes: Uint8Array) => CallProgress = payloadDecoder('progress', {
  progress: num,
  total: optional(num),
  message: optional(progressMessage),
});

/** `mcp.runs.ended.<acct>.<run>`. */
export const decodeRunEnded: (bytes: Uint8Array) => RunEnded = payloadDecoder('runEnded', { account: str, run: str });

/** `mcp.proxy.tools.observed`. The verdict is the registry's to check (discovery does, before storing it). */
export const decodeToolsObserved: (bytes: Uint8Array) => ToolsObserved = payloadDecoder('toolsObserved', {
  account: str,
  server: str,
  tools: list(remoteTool),
  transport,
  verdict: anything,
  authContext: optional(anyStr),
});

/** `mcp.events.server.discovered.<acct>.<server>`. */
export const decodeServerDiscoveredEvent: (bytes: Uint8Array) => ServerDiscoveredEvent = payloadDecoder(
  'serverDiscovered',
  {
    account: str,
    server: str,
    serverId: str,
    generation: int,
    tools: list(remoteTool),
    status: serverStatus,
    toolsChanged: bool,
    overrides: optional(mapOf(permission)),
    held: optional(list(shape({ name: str, cid: anyStr }))),
  },
);

/** `mcp.events.server.deleted.<acct>.<server>`. */
export const decodeServerDeletedEvent: (bytes: Uint8Array) => ServerDeletedEvent = payloadDecoder('serverDeleted', {
  account: str,
  server: str,
  serverId: str,
});

/** `mcp.events.agent.changed.<acct>.<agent>`. */
export const decodeAgentChangedEvent: (bytes: Uint8Array) => AgentChangedEvent = payloadDecoder('agentChanged', {
  account: str,
  agent: str,
  revision: int,
  mcpServers: list(anyStr),
  deleted: optional(bool),
});

/** `agents.tools.changed.<acct>.<agent>`. */
export const decodeAgentToolsChangedEvent: (bytes: Uint8Array) => AgentToolsChangedEvent = payloadDecoder(
  'agentToolsChanged',
  {
    account: str,
    agent: str,
    version: int,
    added: mapOf(anyStr),
    changed: mapOf(anyStr),
    removed: list(anyStr),
  },
);

/** The fields every notice of a waiting call carries (`WaitingCallNotice`). */
const waitingCall = { account: str, agent: str, run: str, tool: str, server: str, expiresAt: str };

/** The fields both approval notifications carry. */
const approvalFields = { ...waitingCall, approvalId: str };

/** `mcp.approvals.requested.<acct>`. */
export const decodeApprovalRequestedEvent: (bytes: Uint8Array) => ApprovalRequestedEvent = payloadDecoder(
  'approvalRequested',
  {
    ...approvalFields,
    remoteName: str,
    argsHash: str,
  },
);

/** `mcp.approvals.decided.<acct>`. */
export const decodeApprovalDecidedEvent: (bytes: Uint8Array) => ApprovalDecidedEvent = payloadDecoder(
  'approvalDecided',
  {
    ...approvalFields,
    decision: oneOf('approved', 'denied'),
    decidedBy: anyStr,
    decidedAt: str,
  },
);

/** The fields both input notifications carry. */
const inputFields = { ...waitingCall, inputRequestId: str };

/** `mcp.inputs.requested.<acct>`. */
export const decodeInputRequestedEvent: (bytes: Uint8Array) => InputRequestedEvent = payloadDecoder('inputRequested', {
  ...inputFields,
  forPerson: bool,
});

/** `mcp.inputs.answered.<acct>`. */
export const decodeInputAnsweredEvent: (bytes: Uint8Array) => InputAnsweredEvent = payloadDecoder('inputAnswered', {
  ...inputFields,
  answeredBy: anyStr,
  answeredAt: str,
});

/**
 * `mcp.reviews.requested.<acct>`. Its names reach a browser's event stream, so each is held to its
 * grammar: a server name, a remote tool name as discovery keeps it (1-512 characters, no control
 * characters), a CIDv1 in base32.
 */
export const decodeToolReviewRequestedEvent: (bytes: Uint8Array) => ToolReviewRequestedEvent = payloadDecoder(
  'toolReviewRequested',
  {
    account: str,
    server: matching(/^[A-Za-z0-9_-]{1,128}$/, 'a server name (1-128 letters, digits, _ or -)'),
    changes: list(
      shape({
        tool: matching(
          // eslint-disable-next-line no-control-regex
          /^[^\u0000-\u001f\u007f-\u009f]{1,512}$/u,
          'a tool name (1-512 characters, no control characters)',
        ),
        cid: matching(/^b[a-z2-7]{20,120}$/, 'a CID (base32)'),
        kind: oneOf('new', 'changed'),
        withheld: bool,
      }),
      REVIEW_CHANGES_MAX,
    ),
    pending: count,
  },
);

/**
 * A request of a request/reply endpoint: strictly decoded and a map (every request is), its
 * fields left to the endpoint's own decoder or handler.
 */
export function decodeRequest(bytes: Uint8Array, payload = 'payload'): Record<string, unknown> {
  const v = decodeStrict(bytes, payload);
  if (!isMap(v)) throw invalidInput(payload, 'must be a map');
  return v;
}

/**
 * The `{ok, value | error}` reply of a request/reply endpoint. Its `error` is left for
 * `WireError.from`, which turns any shape into a typed error; its `value` for the caller's decoder.
 */
export const decodeReply: (bytes: Uint8Array) => { ok: boolean; value?: unknown; error?: unknown } = payloadDecoder(
  'reply',
  { ok: bool, value: anything, error: anything },
);

/**
 * The value of a `registry.oauth.refresh` reply (`Bus.request`'s `decodeValue`): one of the two
 * answers, a vendor only as a non-empty string. Whatever else a reply carries (an authorization
 * URL, say) is left out: a runtime only learns that the owner must authorize.
 */
export const oauthRefreshAnswerValue: Rule<OAuthRefreshAnswer> = (v, field) => {
  const answer = shape({ state: oneOf('authorized', 'auth_required'), vendor: optional(str), error: optional(anyStr) })(
    v,
    field,
  );
  if (answer.state === 'authorized') return { state: 'authorized' };
  return {
    state: 'auth_required',
    ...(answer.vendor !== undefined ? { vendor: answer.vendor } : {}),
    ...(answer.error !== undefined ? { error: answer.error } : {}),
  };
};
