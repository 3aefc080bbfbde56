import type {
  AnthropicTool,
  LambdaToolDocument,
  McpToolDocument,
  OpenAiTool,
  Permission,
  ProxyResult,
  RemoteTool,
} from '@mcpx/domain';
import type { LogLevel } from './call-log.js';
import type { WireErrorShape } from './errors.js';
import type { HeldToolStatus, ServerStatus } from './payload-decoders.js';

export type { HeldToolStatus, ServerStatus };

/** The transport a server is reached over: pinned by its config or found by discovery. */
export const Transports = { http: 'http', sse: 'sse' } as const;
export type Transport = (typeof Transports)[keyof typeof Transports];

export const ServerStates = {
  ok: 'ok',
  error: 'error',
  authRequired: 'auth_required',
  unknown: 'unknown',
} as const;
export type ServerState = (typeof ServerStates)[keyof typeof ServerStates];

/** Payload of `mcp.events.server.discovered.<acct>.<server>`. */
export interface ServerDiscoveredEvent {
  account: string;
  server: string;
  serverId: string;
  /** Increases with every change of the tool list; the projector ignores older generations. */
  generation: number;
  tools: RemoteTool[];
  status: ServerStatus;
  toolsChanged: boolean;
  /**
   * The owner's per-tool permission overrides (remote name → level), carried whole on every
   * event; absent = none. A change of them is published like a tool change (a new generation,
   * `toolsChanged: true`): the documents' permission, hence their CIDs, change.
   */
  overrides?: Record<string, Permission>;
  /**
   * A pinned server's tools withheld from agents (remote name, held contract CID): in no agent's
   * set, reported as conflicts `held_for_review`; absent = none.
   */
  held?: Array<{ name: string; cid: string }>;
}

/** Payload of `mcp.events.server.deleted.<acct>.<server>`. */
export interface ServerDeletedEvent {
  account: string;
  server: string;
  serverId: string;
}

/** Payload of `mcp.events.agent.changed.<acct>.<agent>`. */
export interface AgentChangedEvent {
  account: string;
  agent: string;
  /** Increases with every change of the definition; older revisions are ignored. */
  revision: number;
  mcpServers: string[];
  deleted?: boolean;
}

/** Payload of `agents.tools.changed.<acct>.<agent>`. */
export interface AgentToolsChangedEvent {
  account: string;
  agent: string;
  version: number;
  added: Record<string, string>;
  changed: Record<string, string>;
  removed: string[];
}

/** Request of `mcp.proxy.call` and `mcp.proxy.<instance>.call`. */
export interface ProxyCallRequest {
  account: string;
  agent: string;
  run: string;
  tool: string;
  arguments: Record<string, unknown>;
  callId: string;
  timeoutMs?: number;
  /**
   * The approval of an earlier `approval_required` answer, when the runtime re-sends the same
   * call after a human approved it. Consumed once; it must match the run, tool and arguments.
   */
  approvalId?: string;
  /**
   * The input request of an earlier `input_required` answer, when the runtime re-sends the same
   * call once it is answered: the proxy retries the server's call with the stored, sealed
   * `requestState` and the answers. Used once; it must match the agent, run, tool and arguments.
   */
  inputRequestId?: string;
  /**
   * The runtime's own answers to the requests of `inputRequestId` that name it as the answerer
   * (`answerBy: 'runtime'`), by request key: an `ElicitResult` (`{action, content?}`) for a form,
   * a `CreateMessageResult` for sampling.
   */
  inputResponses?: Record<string, unknown>;
  /**
   * What the runtime can answer itself: `sampling` (it samples its model for the server) and
   * `forms` (it answers form elicitations: a runtime when the agent's definition lets it, the agent
   * endpoint's client whenever it declared form elicitation), `roots` (it shares its roots:
   * `roots/list`). Absent: none. `tasks`: it answers those questions of the call's task too, after
   * the call answered with the task (`waitTask`'s `answer`, an endpoint client's `tasks/update`);
   * without it a task's questions all go to a person (docs/tasks.md#questions).
   */
  answers?: { sampling?: boolean; forms?: boolean; roots?: boolean; tasks?: boolean };
  /**
   * The caller speaks MCP and wants the server's content whole (the agent endpoint): the result
   * carries `content`, `isError` and `meta` instead of `text` and `images`, and a result the
   * server marked `isError` is such a result, not `server_error` (docs/call.md#whole-content).
   */
  content?: boolean;
  /**
   * The caller listens for the server's progress while the call runs: the proxy asks the server
   * with a progress token of its own and publishes each notification, bounded, on
   * `mcp.calls.progress.<acct>.<run>.<callId>` as a {@link CallProgress} (docs/call.md#progress).
   */
  progress?: boolean;
  /**
   * The caller listens for the server's log messages at this level and above while the call runs:
   * the proxy asks the server for them (a modern request's `_meta` logLevel, `logging/setLevel` on
   * a legacy session) and publishes each, bounded, on `mcp.calls.log.<acct>.<run>.<callId>` as a
   * `CallLog` (docs/endpoint.md#logging). Absent: the server is not asked for logs.
   */
  logLevel?: LogLevel;
  /**
   * Asks for a task-augmented call of a tool whose task support is `optional`: the call answers
   * with the result when the task ends within the call bound, else with a task handle
   * (docs/tasks.md). A `required` tool's call is always task-augmented.
   */
  task?: boolean;
  /**
   * How long a task-augmented call waits for its task to end before it answers with the handle
   * (at most what is left of the call bound; 0: the handle at once). The agent endpoint's client
   * that asked for a task polls it itself (docs/endpoint.md#tasks).
   */
  taskWaitMs?: number;
}

/** Payload of `mcp.calls.progress.<acct>.<run>.<callId>`: one progress notification of the call's server. */
export interface CallProgress {
  /** The server's progress value (finite; MCP says it increases). */
  progress: number;
  total?: number;
  /** The server's message, cut to {@link PROGRESS_MESSAGE_MAX_CHARS}. */
  message?: string;
}

/** The longest progress message passed on (longer ones are cut). */
export const PROGRESS_MESSAGE_MAX_CHARS = 1024;

/**
 * The one reply envelope of every request/reply endpoint: a value, or a typed error
 * (`WireError.toJSON()`, rebuilt by `WireError.from`). `E` holds the fields an endpoint adds to
 * both outcomes, so an extension is still this envelope; `K` names the value's key, `value` but
 * for the proxy's call, whose outside callers have read `result` since its first release.
 */
export type Reply<T, E extends object = object, K extends string = 'value'> =
  ({ ok: true } & { [key in K]: T } & E) | ({ ok: false; error: WireErrorShape } & E);

/** The call's reply: the one envelope, with the instance that answered (a run's sticky route) and its value under `result`. */
export type ProxyCallReply = Reply<ProxyResult, { instance: string }, 'result'>;

/** Payload of `mcp.proxy.cancel`. */
export interface ProxyCancel {
  account: string;
  run: string;
  callId: string;
}

/** Payload of `mcp.runs.ended.<acct>.<run>`. */
export interface RunEnded {
  account: string;
  run: string;
}

/** Payload of `mcp.proxy.tools.observed` (a quiet discovery). */
export interface ToolsObserved {
  account: string;
  server: string;
  tools: RemoteTool[];
  transport: Transport;
  /**
   * The era verdict the proxy's connection ran on, sent when the proxy probed for it (it had none,
   * or the one it had stopped working and was re-probed): the registry stores it for every
   * instance. Plain JSON (`EraVerdict` of the MCP client); the proxy never writes the registry's tables.
   */
  verdict?: unknown;
  /** SHA-256 (hex) of the URL and headers the verdict was probed with: its auth context, never a secret. */
  authContext?: string;
}

/** Request of `projector.agent-tools.get`. */
export interface AgentToolsRequest {
  account: string;
  agent: string;
  /**
   * Names a turn asks to promote (read or called in the transcript). When present, the reply's
   * `promoted` holds those the promotion rule admits, with their provider tool formats.
   */
  requested?: string[];
}

/** Tools in the provider formats a turn hands the model. */
export interface ProviderToolSet {
  openai: OpenAiTool[];
  anthropic: AnthropicTool[];
}

export interface AgentToolsReply {
  version: number;
  documents: Array<McpToolDocument & { cid: string }>;
  conflicts: Array<{ name: string; server: string; heldBy: string }>;
  /** The agent's authored tools (enabled or not). */
  lambdas?: Array<LambdaToolDocument & { cid: string }>;
  /** The Space index lines of the agent's remote tools (collapsed per server, within the budget). */
  index?: string;
  /** What `read ~/tools/` lists of remote tools: every one. */
  listing?: string;
  /** The provider formats of every enabled document (mcp documents, then enabled lambdas). */
  providerTools?: ProviderToolSet;
  /** Present when `requested` was: the admitted names, in request order, and their provider formats. */
  promoted?: { names: string[] } & ProviderToolSet;
}

/** Request of `projector.lambda.set` (SetLambdaTool). */
export interface SetLambdaToolRequest {
  account: string;
  agent: string;
  name: string;
  /** `{description?, inputSchema?, enabled?}`; kind, when given, must be `lambda`. */
  document: unknown;
  /**
   * The CID the registry recorded for the document (`lambdaToolDocument`): when given, a document
   * whose CID the projector computes otherwise is not saved (`internal`), so the audit entry names
   * what is stored.
   */
  cid?: string;
}

/** Request of `projector.lambda.delete` (DeleteLambdaTool). */
export interface DeleteLambdaToolRequest {
  account: string;
  agent: string;
  name: string;
}

/** Reply of both lambda requests: the agent's set version after the change. */
export interface LambdaToolReply {
  name: string;
  /** The saved document's CID; absent after a delete. */
  cid?: string;
  version: number;
}

/** What every notice of a call waiting for someone names (an approval's, an input request's). */
export interface WaitingCallNotice {
  account: string;
  agent: string;
  run: string;
  tool: string;
  server: string;
  /** ISO-8601: until when it waits (requested), or until when the call may be re-sent with it (decided, answered). */
  expiresAt: string;
}

/** Payload of `mcp.approvals.requested.<acct>`: an `always_ask` call waits for a human. */
export interface ApprovalRequestedEvent extends WaitingCallNotice {
  approvalId: string;
  remoteName: string;
  /** Hex sha-256 of the canonical (dag-cbor) encoding of the call's arguments. */
  argsHash: string;
}

/** Payload of `mcp.approvals.decided.<acct>`: an owner approved or denied a waiting call. */
export interface ApprovalDecidedEvent extends WaitingCallNotice {
  approvalId: string;
  decision: 'approved' | 'denied';
  /** The signer who decided. */
  decidedBy: string;
  /** ISO-8601. */
  decidedAt: string;
}

/** What an approval's decided notice is made of (the approval store's record has these fields). */
export interface DecidedApproval {
  account: string;
  id: string;
  agent: string;
  run: string;
  tool: string;
  server: string;
  decidedBy?: string;
  /** Epoch ms; absent: now. */
  decidedAt?: number;
  /** Epoch ms. */
  expiresAt: number;
}

/**
 * The `approval-decided` notice of a decision, worded once for the registry (an owner's decision)
 * and the endpoint (a client's user's): no argument value goes out.
 */
export function approvalDecidedEvent(r: DecidedApproval, decision: 'approved' | 'denied'): ApprovalDecidedEvent {
  return {
    account: r.account,
    approvalId: r.id,
    agent: r.agent,
    run: r.run,
    tool: r.tool,
    server: r.server,
    decision,
    decidedBy: r.decidedBy ?? '',
    decidedAt: new Date(r.decidedAt ?? Date.now()).toISOString(),
    expiresAt: new Date(r.expiresAt).toISOString(),
  };
}
