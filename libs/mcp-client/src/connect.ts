import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  httpStatusOf,
  McpClientError,
  McpClientErrorCode,
  networkCause,
  redactUrl,
  scrub,
  type McpClientErrorDetails,
} from './errors.js';
import { trackedFetch, type FetchObservations } from './tracked-fetch.js';
import { Connection, type McpConnection, type McpTransportKind } from './connection.js';

export type { CallToolOptions, ListToolsOptions, McpConnection, McpTransportKind } from './connection.js';


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

const DEFAULT_CLIENT_INFO = { name: 'mcp-connector', version: '0.1.0' };
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

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
