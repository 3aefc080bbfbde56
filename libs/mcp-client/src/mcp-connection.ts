/**
 * The public face of an established connection: what `tools/call` hands back, the options of each
 * request, and the `McpConnection` interface (implemented by `./connection.ts`).
 */
import type {
  CallToolRequest,
  CallToolResult,
  Client,
  ClientCapabilities,
  Implementation,
  InputRequiredResult,
  LoggingLevel,
  Progress,
  Tool,
} from '@modelcontextprotocol/client';
import type { EraVerdict } from './era-verdict.js';
import type { TaskWireTarget } from './tasks.js';
import type { CurrentTools, ToolsWithHints } from './listed-tools.js';

export type { CurrentTools, ToolsWithHints } from './listed-tools.js';

/** The transport a connection ended up on. */
export type McpTransportKind = 'http' | 'sse';

/**
 * What `tools/call` hands back: a complete result (possibly `isError`), or, on a modern server,
 * an `input_required` result returned as-is (the caller answers it; nothing here auto-fulfils).
 */
export type McpCallResult = CallToolResult | InputRequiredCallResult;

/** An `input_required` result: it has no `content` (so code reading `content` sees none, not garbage). */
export type InputRequiredCallResult = InputRequiredResult & {
  content?: undefined;
  isError?: undefined;
  structuredContent?: undefined;
};

/** Whether a call's result is an `input_required` one (2026-07-28 MRTR), not a complete result. */
export function isInputRequired(result: McpCallResult): result is InputRequiredCallResult {
  return (result as { resultType?: unknown }).resultType === 'input_required';
}

/**
 * What a server asks before its tool can finish (2026-07-28 multi round-trip requests), as a
 * caller answers it: `inputRequests` (by key: `{method, params}`, e.g. `elicitation/create`) and
 * the opaque `requestState` to send back unchanged. Answer by calling the same tool again with
 * `CallToolOptions.inputResponses` (by the same keys) and `requestState`.
 */
export interface InputRequest {
  kind: 'input_required';
  inputRequests: Record<string, { method: string; params?: unknown }>;
  requestState?: string;
}

/** The {@link InputRequest} of an `input_required` result, or `undefined` for a complete result. */
export function inputRequestOf(result: McpCallResult): InputRequest | undefined {
  if (!isInputRequired(result)) return undefined;
  const raw = (result as { inputRequests?: unknown }).inputRequests;
  const inputRequests: InputRequest['inputRequests'] = {};
  if (raw !== null && typeof raw === 'object') {
    for (const [key, req] of Object.entries(raw as Record<string, unknown>)) {
      const method = (req as { method?: unknown } | null)?.method;
      if (typeof method === 'string')
        inputRequests[key] = {
          method,
          ...((req as { params?: unknown }).params !== undefined
            ? { params: (req as { params?: unknown }).params }
            : {}),
        };
    }
  }
  const state = (result as { requestState?: unknown }).requestState;
  return { kind: 'input_required', inputRequests, ...(typeof state === 'string' ? { requestState: state } : {}) };
}

export interface CallToolOptions {
  /** Default 120 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * The caller's own controller, made the call's (instead of `signal`): aborting it cancels the
   * call, and the call's timeout aborts it too (so after a timeout it reads aborted). Spares a
   * second controller linked to the caller's signal on every call.
   */
  controller?: AbortController;
  /** Ask the server for progress notifications. */
  onProgress?: (progress: Progress) => void;
  /** Restart the timeout on each progress notification (requests progress). */
  resetTimeoutOnProgress?: boolean;
  /**
   * Ask the server for its log messages at this level and above: a modern request's `_meta`
   * logLevel; on a legacy session `logging/setLevel` first, when the server declares logging and
   * the session's level is another (the level stays the session's). With {@link onLog}.
   */
  logLevel?: LoggingLevel;
  /**
   * Told of each `notifications/message` on the call's response stream (params unchecked: the
   * caller bounds them). Not on a legacy SSE connection (its messages go to the connection).
   */
  onLog?: (params: unknown) => void;
  /** Told when a broken legacy response stream was resumed (`Last-Event-ID`), or could not be. */
  onResume?: (outcome: 'resumed' | 'failed') => void;
  /**
   * The answers to an earlier `input_required` result of this tool (by the keys of its
   * `inputRequests`), sent as the retry's `inputResponses` (modern only).
   */
  inputResponses?: Record<string, unknown>;
  /** That result's `requestState`, sent back unchanged with the retry (modern only). */
  requestState?: string;
  /**
   * Capabilities this call declares beyond the connection's (modern only: a request's `_meta`
   * carries them), e.g. `roots` when the caller behind the call shares its roots.
   */
  capabilities?: ClientCapabilities;
  /**
   * The capabilities this call declares instead of the connection's (modern only): a gateway's
   * call on behalf of a client that declared its own, so the server asks only what that client
   * can answer. `capabilities` is not used with it.
   */
  onlyCapabilities?: ClientCapabilities;
  /**
   * The tool's definition as listed: on a modern server its `x-mcp-header` parameters are
   * mirrored as `Mcp-Param-<Name>` headers (the SDK reads them from here). Its `outputSchema` is
   * never used to validate the result.
   */
  tool?: Tool;
  /**
   * A task-augmented call (docs/tasks.md): legacy sends `params.task: {ttl}`, modern declares the
   * tasks extension in `_meta`. The result may then be a created task (`createdTaskOf`).
   */
  task?: { ttlMs: number };
  /**
   * The W3C trace carrier (`traceparent`, `tracestate`) of the caller's span, for a caller whose
   * trace context does not follow awaits: a modern request carries it in its `_meta`, a call's
   * POST also in its headers. Unset: the connection's `traceCarrier`, read when the request is made.
   */
  trace?: Record<string, string>;
}

export interface ListToolsOptions {
  /** Stop after this many pages. Default 50. */
  maxPages?: number;
  /** Per page. Default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * The W3C trace carrier (`traceparent`, `tracestate`) of the caller's span, for a caller whose
   * trace context does not follow awaits: each page's request carries it (modern: in its `_meta`;
   * legacy: in its HTTP headers). Unset: the connection's `traceCarrier`, read when the listing starts.
   */
  trace?: Record<string, string>;
}

export interface CurrentToolsOptions {
  /**
   * The longest a listing stands, whatever the server says (its `ttlMs` above this is held to it;
   * a legacy server that announces its list changes is trusted this long).
   */
  maxAgeMs: number;
  /** Per page of a new listing. Default 60 s. */
  timeoutMs?: number;
  /** The caller's trace carrier, for a new listing's requests (see {@link ListToolsOptions.trace}). */
  trace?: Record<string, string>;
}

export interface McpListenOptions {
  signal?: AbortSignal;
}

/** The methods {@link McpConnection.relay} sends. */
export type RelayedMethod =
  | 'resources/list'
  | 'resources/templates/list'
  | 'resources/read'
  | 'prompts/list'
  | 'prompts/get'
  | 'completion/complete';

export interface RelayOptions {
  /** Default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Hands a 2026-07-28 `input_required` result back as it is (`prompts/get`, `resources/read`),
   * for the caller to ask its own client, instead of failing the request.
   */
  allowInputRequired?: boolean;
  /** The capabilities the request declares instead of the connection's (modern only, in `_meta`). */
  onlyCapabilities?: ClientCapabilities;
  /**
   * The W3C trace carrier (`traceparent`, `tracestate`) of the caller's span, for a caller whose
   * trace context does not follow awaits: a modern request carries it in its `_meta`, a legacy
   * one in its HTTP headers. Unset: the connection's `traceCarrier`, read when the request is made.
   */
  trace?: Record<string, string>;
}

export interface McpConnection {
  readonly client: Client;
  /** The transport in use. */
  readonly transport: McpTransportKind;
  readonly serverInfo: Implementation | undefined;
  /** What this connection runs on: the given prior, or a fresh probe's result (store it when `reprobed`). */
  readonly verdict: EraVerdict;
  readonly era: 'modern' | 'legacy';
  readonly protocolVersion: string;
  /** True when the given prior failed and the server was probed again: the caller re-stores `verdict`. */
  readonly reprobed: boolean;
  /** A legacy Streamable HTTP session's id (for `mcp.session.id` on spans); a modern connection has none. */
  readonly sessionId?: string | undefined;
  /**
   * `tools/call` as a pass-through: `structuredContent` is not validated against the tool's
   * `outputSchema`, an `isError` result is returned, not thrown, and an `input_required` result
   * is returned as it came. Throws {@link McpClientError}.
   */
  callTool(params: CallToolRequest['params'], opts?: CallToolOptions): Promise<McpCallResult>;
  /**
   * Every tool, following `nextCursor`. Stops at `maxPages` or at a cursor seen before, and keeps
   * the first tool of each name. Throws {@link McpClientError}.
   */
  listTools(opts?: ListToolsOptions): Promise<Tool[]>;
  /** {@link listTools} with the first page's `ttlMs`/`cacheScope`. */
  listToolsWithHints(opts?: ListToolsOptions): Promise<ToolsWithHints>;
  /**
   * One request of the methods a gateway relays as they are (`resources/*`, `prompts/*`,
   * `completion/complete`): the server's result, checked by the SDK against the method's result
   * schema, secrets scrubbed; the server's capabilities are not checked here (the caller does).
   * A server's JSON-RPC error is `protocol_error` with its `mcpCode`. Throws {@link McpClientError}.
   */
  relay(method: RelayedMethod, params: Record<string, unknown>, opts?: RelayOptions): Promise<Record<string, unknown>>;
  /**
   * The tools the server lists now, as far as this connection can tell: its last listing (any
   * {@link listTools} on it) while that is fresh, else a new listing that concurrent callers
   * share. Fresh means no `notifications/tools/list_changed` heard since it was asked for (nor
   * {@link markToolsChanged}), and younger than the server lets a client keep it: a modern list's
   * `ttlMs` (absent: 0, stale at once, as the 2026-07-28 caching rules say); a legacy server's only
   * while it advertises `tools.listChanged` (it says when its list changes) and its notifications
   * can reach the connection: on Streamable HTTP, while the session's GET stream is open, and only
   * a listing asked for since it opened; never longer than `maxAgeMs`. Throws {@link McpClientError}.
   */
  currentTools(opts: CurrentToolsOptions): Promise<CurrentTools>;
  /**
   * Takes the server's tool list as changed, as its `notifications/tools/list_changed` would: the
   * last listing is stale, and the connect option's `onToolsListChanged` runs (its owner lists
   * again). For a caller that found a change the server did not announce.
   */
  markToolsChanged(): void;
  /**
   * On a modern connection whose server advertises `tools.listChanged`: opens
   * `subscriptions/listen` with `{toolsListChanged: true}`; `onToolsListChanged` runs on each
   * `notifications/tools/list_changed`. Absent on legacy connections (they get unsolicited
   * notifications through `ConnectMcpOptions.onToolsListChanged`).
   */
  readonly listen?: (onToolsListChanged: () => void, opts?: McpListenOptions) => Promise<{ close(): Promise<void> }>;
  /**
   * Where this connection's task requests go (`taskRequest` of ./tasks.ts): a modern connection,
   * or a legacy Streamable HTTP session (its id included: a legacy task lives in its session).
   * Undefined on a legacy SSE connection (tasks are not brokered there).
   */
  taskTarget(): TaskWireTarget | undefined;
  /**
   * Ends the session (best effort) and closes the transport. Idempotent. `keepSession`: closes the
   * transport without ending a legacy session (no DELETE), for requests that go on with the
   * session's id alone (a brokered 2025 task's; {@link endTaskSession} ends it later).
   */
  close(opts?: { keepSession?: boolean }): Promise<void>;
  readonly closed: boolean;
}
