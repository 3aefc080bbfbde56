import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ListToolsResultSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolRequest,
  type CallToolResult,
  type Implementation,
  type Progress,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  classifyMcpError,
  httpStatusOf,
  McpClientError,
  McpClientErrorCode,
  networkCause,
  redactUrl,
  scrub,
  type ClassifyContext,
  type McpClientErrorDetails,
} from './errors.js';
import { trackedFetch, type FetchObservations } from './tracked-fetch.js';
import { directCall, type DirectCallTarget } from './direct-call.js';

export type McpTransportKind = 'http' | 'sse';

export interface ConnectMcpOptions {
  url: string;
  /** Pin a transport. Unset: Streamable HTTP, then legacy SSE only if that failed with an HTTP 4xx (not 401). */
  transport?: McpTransportKind;
  /** Static request headers (e.g. `Authorization`); their values never appear in errors. */
  headers?: Record<string, string>;
  /** Default `{name: 'mcp-connector', version: '0.1.0'}`. */
  clientInfo?: { name: string; version: string };
  /** Bound on the whole connect, fallback included. Default 30 s. */
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
  /** Aborts the connect (not the connection once established). */
  signal?: AbortSignal;
  /** Called on `notifications/tools/list_changed`; re-list with `listTools()`. */
  onToolsListChanged?: () => void;
}

export interface CallToolOptions {
  /** Default 120 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Ask the server for progress notifications. */
  onProgress?: (progress: Progress) => void;
  /** Restart the timeout on each progress notification (requests progress). */
  resetTimeoutOnProgress?: boolean;
  /** Told when a broken response stream was resumed (`Last-Event-ID`), or could not be. */
  onResume?: (outcome: 'resumed' | 'failed') => void;
}

export interface ListToolsOptions {
  /** Stop after this many pages. Default 50. */
  maxPages?: number;
  /** Per page. Default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface McpConnection {
  readonly client: Client;
  /** The transport in use. */
  readonly transport: McpTransportKind;
  readonly serverInfo: Implementation | undefined;
  /**
   * `tools/call` as a pass-through: `structuredContent` is not validated against the tool's
   * `outputSchema`, and an `isError` result is returned, not thrown. Throws {@link McpClientError}.
   */
  callTool(params: CallToolRequest['params'], opts?: CallToolOptions): Promise<CallToolResult>;
  /**
   * Every tool, following `nextCursor`. Stops at `maxPages` or at a cursor seen before, and keeps
   * the first tool of each name. Throws {@link McpClientError}.
   */
  listTools(opts?: ListToolsOptions): Promise<Tool[]>;
  /** Ends the session (best effort) and closes the transport. Idempotent. */
  close(): Promise<void>;
  readonly closed: boolean;
}

const DEFAULT_CLIENT_INFO = { name: 'mcp-connector', version: '0.1.0' };
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const DEFAULT_LIST_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_PAGES = 50;
const TERMINATE_SESSION_WAIT_MS = 2_000;

/**
 * Connects to a remote MCP server and completes the handshake. Throws {@link McpClientError}:
 * `connect_failed`, `unauthorized`, `timeout` (connect deadline) or `cancelled` (`signal`).
 * When both transports fail, the Streamable HTTP error is thrown (`details.fallbackError` has the other).
 */
export async function connectMcp(opts: ConnectMcpOptions): Promise<McpConnection> {
  const url = parseServerUrl(opts.url);
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const deadline = connectDeadline(timeoutMs, opts.signal);
  const attempt = (kind: McpTransportKind): Promise<McpConnection> =>
    connectWith(kind, url, opts, deadline, timeoutMs);
  try {
    if (opts.transport !== undefined) return await attempt(opts.transport);
    try {
      return await attempt('http');
    } catch (first) {
      if (!shouldFallBack(first)) throw first;
      try {
        return await attempt('sse');
      } catch (second) {
        first.details.fallbackError = second instanceof Error ? second.message : String(second);
        throw first;
      }
    }
  } finally {
    deadline.dispose();
  }
}

/** The spec's backwards-compatibility rule: fall back on a 4xx, never on 401, 5xx or the network. */
function shouldFallBack(err: unknown): err is McpClientError {
  return (
    err instanceof McpClientError &&
    err.code === McpClientErrorCode.ConnectFailed &&
    err.status !== undefined &&
    err.status >= 400 &&
    err.status < 500
  );
}

function parseServerUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new McpClientError(McpClientErrorCode.ConnectFailed, 'MCP server URL is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpClientError(McpClientErrorCode.ConnectFailed, `MCP server URL must be http(s), got ${url.protocol}`);
  }
  return url;
}

interface Deadline {
  readonly signal: AbortSignal;
  remainingMs(): number;
  dispose(): void;
}

function connectDeadline(timeoutMs: number, outer: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  const endsAt = Date.now() + timeoutMs;
  const timer = setTimeout(() => controller.abort(new Error('connect timeout')), timeoutMs);
  const onAbort = (): void => controller.abort(outer?.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    remainingMs: () => Math.max(1, endsAt - Date.now()),
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

async function connectWith(
  kind: McpTransportKind,
  url: URL,
  opts: ConnectMcpOptions,
  deadline: Deadline,
  timeoutMs: number,
): Promise<McpConnection> {
  const observations: FetchObservations = {};
  const fetchFn = trackedFetch(opts.fetch ?? globalThis.fetch, observations);
  const requestInit: RequestInit = { headers: { ...opts.headers } };
  const transport: Transport =
    kind === 'http'
      ? new StreamableHTTPClientTransport(url, { requestInit, fetch: fetchFn })
      : new SSEClientTransport(url, { requestInit, fetch: fetchFn });
  const client = new Client(opts.clientInfo ?? DEFAULT_CLIENT_INFO, { capabilities: {} });
  // Transport hiccups (a dropped GET stream the SDK reconnects) surface on the failing request.
  client.onerror = () => {};
  const onToolsListChanged = opts.onToolsListChanged;
  if (onToolsListChanged) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      try {
        onToolsListChanged();
      } catch {
        // A listener's failure must not break the connection.
      }
    });
  }
  const secrets = Object.values(opts.headers ?? {});
  try {
    if (deadline.signal.aborted) throw deadline.signal.reason;
    // The deadline's own timer decides: the SDK's request timeout is set a little later, so a
    // connect that runs out of time is always reported as our timeout.
    await raceAbort(client.connect(transport, { timeout: deadline.remainingMs() + 1_000, signal: deadline.signal }), deadline.signal);
  } catch (error) {
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
    throw connectError(error, { kind, url, opts, deadline, timeoutMs, observations, secrets });
  }
  return new Connection(client, kind, transport, { secrets, observations, url, fetch: opts.fetch ?? globalThis.fetch, headers: { ...opts.headers } });
}

async function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

interface ConnectErrorContext {
  kind: McpTransportKind;
  url: URL;
  opts: ConnectMcpOptions;
  deadline: Deadline;
  timeoutMs: number;
  observations: FetchObservations;
  secrets: readonly string[];
}

function connectError(err: unknown, ctx: ConnectErrorContext): McpClientError {
  const where = `MCP connect to ${redactUrl(ctx.url)} (${ctx.kind === 'http' ? 'Streamable HTTP' : 'SSE'})`;
  const base: McpClientErrorDetails = { transport: ctx.kind };
  const cause = { cause: err };
  if (ctx.opts.signal?.aborted) {
    return new McpClientError(McpClientErrorCode.Cancelled, `${where} cancelled`, base, cause);
  }
  if (ctx.deadline.signal.aborted) {
    return new McpClientError(McpClientErrorCode.Timeout, `${where} timed out after ${ctx.timeoutMs} ms`, base, cause);
  }
  const status = httpStatusOf(err);
  if (err instanceof UnauthorizedError || status === 401) {
    const details: McpClientErrorDetails = { ...base, status: 401 };
    if (ctx.observations.wwwAuthenticate !== undefined) details.wwwAuthenticate = ctx.observations.wwwAuthenticate;
    return new McpClientError(McpClientErrorCode.Unauthorized, `${where} failed: HTTP 401 Unauthorized`, details, cause);
  }
  if (status !== undefined) {
    const body = responseText(err, ctx.secrets);
    return new McpClientError(
      McpClientErrorCode.ConnectFailed,
      `${where} failed: HTTP ${status}${body ? ` (${body})` : ''}`,
      { ...base, status },
      cause,
    );
  }
  const network = networkCause(err) ?? networkCause(ctx.observations.lastNetworkError);
  if (network !== undefined) {
    return new McpClientError(McpClientErrorCode.ConnectFailed, `${where} failed: ${scrub(network, ctx.secrets)}`, base, cause);
  }
  if (err instanceof McpError) {
    return new McpClientError(
      McpClientErrorCode.ConnectFailed,
      `${where} failed: server error ${err.code}: ${responseText(err, ctx.secrets)}`,
      { ...base, mcpCode: err.code },
      cause,
    );
  }
  return new McpClientError(McpClientErrorCode.ConnectFailed, `${where} failed: ${responseText(err, ctx.secrets)}`, base, cause);
}

/** The SDK error's text without its prefixes: for an HTTP error, the server's response body. */
function responseText(err: unknown, secrets: readonly string[]): string {
  const raw = err instanceof Error ? err.message : String(err);
  return scrub(
    raw
      .replace(/^(Streamable HTTP error|SSE error|MCP error -?\d+): /, '')
      .replace(/^Error POSTing to endpoint( \(HTTP \d+\))?: ?/, '')
      .replace(/^Non-200 status code \(\d+\)$/, '')
      .trim(),
    secrets,
  );
}

interface ConnectionContext {
  secrets: readonly string[];
  observations: FetchObservations;
  url: URL;
  /** The caller's fetch, unwrapped: the direct call path owns its request's signal. */
  fetch: typeof fetch;
  headers: Record<string, string>;
}

class Connection implements McpConnection {
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly client: Client;
  readonly transport: McpTransportKind;
  readonly #sdkTransport: Transport;
  readonly #ctx: ConnectionContext;

  constructor(client: Client, kind: McpTransportKind, sdkTransport: Transport, ctx: ConnectionContext) {
    this.client = client;
    this.transport = kind;
    this.#sdkTransport = sdkTransport;
    this.#ctx = ctx;
    client.onclose = () => {
      this.#closed = true;
    };
  }

  get closed(): boolean {
    return this.#closed;
  }

  get serverInfo(): Implementation | undefined {
    return this.client.getServerVersion();
  }

  async callTool(params: CallToolRequest['params'], opts: CallToolOptions = {}): Promise<CallToolResult> {
    this.#assertOpen();
    const direct = opts.onProgress || opts.resetTimeoutOnProgress ? undefined : this.#directTarget();
    if (direct !== undefined) {
      try {
        return await directCall(direct, params, { timeoutMs: opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.onResume ? { onResume: opts.onResume } : {}) });
      } catch (error) {
        throw classifyMcpError(error, undefined, this.#classifyContext());
      }
    }
    const options: RequestOptions = { timeout: opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS };
    if (opts.signal) options.signal = opts.signal;
    if (opts.onProgress || opts.resetTimeoutOnProgress) {
      options.onprogress = opts.onProgress ?? (() => {});
      options.resetTimeoutOnProgress = opts.resetTimeoutOnProgress ?? false;
    }
    try {
      return await this.client.request({ method: 'tools/call', params }, CallToolResultSchema, options);
    } catch (error) {
      throw classifyMcpError(error, opts.signal, this.#classifyContext());
    }
  }

  async listTools(opts: ListToolsOptions = {}): Promise<Tool[]> {
    this.#assertOpen();
    const maxPages = opts.maxPages ?? DEFAULT_MAX_PAGES;
    const options: RequestOptions = { timeout: opts.timeoutMs ?? DEFAULT_LIST_TIMEOUT_MS };
    if (opts.signal) options.signal = opts.signal;
    const byName = new Map<string, Tool>();
    const seenCursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page += 1) {
      let result;
      try {
        // Not client.listTools(): that also rebuilds the SDK's output validators, which we never use.
        result = await this.client.request(
          { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
          ListToolsResultSchema,
          options,
        );
      } catch (error) {
        throw classifyMcpError(error, opts.signal, this.#classifyContext());
      }
      for (const tool of result.tools) if (!byName.has(tool.name)) byName.set(tool.name, tool);
      const next = result.nextCursor;
      if (next === undefined || seenCursors.has(next)) break;
      seenCursors.add(next);
      cursor = next;
    }
    return [...byName.values()];
  }

  async close(): Promise<void> {
    this.#closing ??= this.#close();
    await this.#closing;
  }

  async #close(): Promise<void> {
    const transport = this.#sdkTransport;
    if (!this.#closed && transport instanceof StreamableHTTPClientTransport) {
      // Let the server free the session now rather than at its idle timeout.
      await withTimeout(transport.terminateSession().catch(() => {}), TERMINATE_SESSION_WAIT_MS);
    }
    this.#closed = true;
    await this.client.close().catch(() => {});
  }

  #direct: DirectCallTarget | undefined;

  /** The session a `tools/call` can be sent on directly (Streamable HTTP with a session id). */
  #directTarget(): DirectCallTarget | undefined {
    const t = this.#sdkTransport;
    if (!(t instanceof StreamableHTTPClientTransport) || t.sessionId === undefined) return undefined;
    const sessionId = t.sessionId;
    if (this.#direct?.sessionId !== sessionId) {
      const client = this.client;
      this.#direct = {
        url: this.#ctx.url,
        fetch: this.#ctx.fetch,
        headers: this.#ctx.headers,
        sessionId,
        protocolVersion: t.protocolVersion,
        cancelled: (requestId, reason) => {
          client.notification({ method: 'notifications/cancelled', params: { requestId, reason } }).catch(() => {});
        },
      };
    }
    return this.#direct;
  }

  #assertOpen(): void {
    if (this.#closed) {
      throw new McpClientError(McpClientErrorCode.TransportError, 'MCP connection is closed', { transport: this.transport });
    }
  }

  #classifyContext(): ClassifyContext {
    const ctx: ClassifyContext = { secrets: this.#ctx.secrets, transport: this.transport };
    if (this.#ctx.observations.wwwAuthenticate !== undefined) ctx.wwwAuthenticate = this.#ctx.observations.wwwAuthenticate;
    return ctx;
  }
}

async function withTimeout(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
