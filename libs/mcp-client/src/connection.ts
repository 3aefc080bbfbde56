import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ListToolsResultSchema,
  type CallToolRequest,
  type CallToolResult,
  type Implementation,
  type Progress,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { classifyMcpError, McpClientError, McpClientErrorCode, type ClassifyContext } from './errors.js';
import type { FetchObservations } from './tracked-fetch.js';
import { directCall, type DirectCallTarget } from './direct-call.js';

/** The transport a connection ended up on. */
export type McpTransportKind = 'http' | 'sse';

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

const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const DEFAULT_LIST_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_PAGES = 50;
const TERMINATE_SESSION_WAIT_MS = 2_000;

export interface ConnectionContext {
  secrets: readonly string[];
  observations: FetchObservations;
  url: URL;
  /** The caller's fetch, unwrapped: the direct call path owns its request's signal. */
  fetch: typeof fetch;
  headers: Record<string, string>;
}

/** An established session: the pass-through call path, paged listing, and an idempotent close. */
export class Connection implements McpConnection {
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
