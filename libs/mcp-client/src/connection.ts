import {
  CLIENT_CAPABILITIES_META_KEY,
  StreamableHTTPClientTransport,
  type CallToolRequest,
  type CallToolResult,
  type Client,
  type ClientCapabilities,
  type Implementation,
  type InputRequiredResult,
  type ListToolsResult,
  type LoggingLevel,
  type Progress,
  type RequestOptions,
  type Tool,
  type Transport,
} from '@modelcontextprotocol/client';
import { shouldReprobe, type EraVerdict } from './era-verdict.js';
import { scrubberOf } from './scrub.js';
import {
  callRan,
  classifyMcpError,
  isStaleModernPrior,
  McpClientError,
  McpClientErrorCode,
  type ClassifyContext,
} from './errors.js';
import type { McpHttpRequest } from './http-request.js';
import { elicitationAnswerer, type ElicitationHandler, type SamplingHandler } from './elicitation.js';
import { withTaskSupport, type TaskWireTarget } from './tasks.js';
import { toolCall, traceMeta, type LegacyTarget, type ModernTarget, type ToolCallTarget } from './tool-call.js';
import type { FetchObservations } from './tracked-fetch.js';
import type { CurrentTools, ListedTools, ToolsWithHints } from './listed-tools.js';

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
}

export interface ListToolsOptions {
  /** Stop after this many pages. Default 50. */
  maxPages?: number;
  /** Per page. Default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface CurrentToolsOptions {
  /**
   * The longest a listing stands, whatever the server says (its `ttlMs` above this is held to it;
   * a legacy server that announces its list changes is trusted this long).
   */
  maxAgeMs: number;
  /** Per page of a new listing. Default 60 s. */
  timeoutMs?: number;
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
   * while it advertises `tools.listChanged` (it says when its list changes); never longer than
   * `maxAgeMs`. Throws {@link McpClientError}.
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
  /** Ends the session (best effort) and closes the transport. Idempotent. */
  close(): Promise<void>;
  readonly closed: boolean;
}

const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const DEFAULT_LIST_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_PAGES = 50;
const TERMINATE_SESSION_WAIT_MS = 2_000;

/** One established SDK client on one transport, and the verdict it ran on. */
export interface ConnectionCore {
  client: Client;
  kind: McpTransportKind;
  sdkTransport: Transport;
  verdict: EraVerdict;
  observations: FetchObservations;
}

export interface ConnectionContext {
  secrets: readonly string[];
  url: URL;
  /** The `tools/call` path's request (explicit, or the connection's fetch adapted). */
  request: McpHttpRequest;
  headers: Record<string, string>;
  /** Declared in a modern call's `_meta`. */
  capabilities: ClientCapabilities;
  clientInfo: Implementation;
  /** Answers a legacy server's pushed `elicitation/create` (also on the call path's own streams). */
  onElicitation: ElicitationHandler | undefined;
  /** Answers a legacy server's pushed `sampling/createMessage` (also on the call path's own streams). */
  onSampling: SamplingHandler | undefined;
  /** The active trace context as `traceparent`/`tracestate`, for a modern request's `_meta`. */
  traceCarrier: (() => Record<string, string>) | undefined;
  /** True when the core was connected from a caller's prior: a stale one is re-probed once. */
  fromPrior: boolean;
  /** Connects afresh with no prior (mode auto): the re-probe of a stale modern prior. */
  reprobe: () => Promise<ConnectionCore>;
  /** The connection's listings and the list changes heard (a legacy server's notifications reach it from the connect). */
  listed: ListedTools;
  /** The connect option `onToolsListChanged` (see {@link McpConnection.markToolsChanged}). */
  onToolsListChanged: (() => void) | undefined;
}

/** An established connection: the pass-through call path, paged listing, and an idempotent close. */
export class Connection implements McpConnection {
  #closed = false;
  #closing: Promise<void> | undefined;
  #core: ConnectionCore;
  #reprobed: boolean;
  #reprobing: Promise<ConnectionCore> | undefined;
  readonly #ctx: ConnectionContext;

  constructor(core: ConnectionCore, ctx: ConnectionContext, reprobed: boolean) {
    this.#core = core;
    this.#ctx = ctx;
    this.#reprobed = reprobed;
    this.#watch(core);
    if (core.verdict.era === 'modern') this.listen = this.#listen.bind(this);
  }

  listen?: McpConnection['listen'];

  get client(): Client {
    return this.#core.client;
  }
  get transport(): McpTransportKind {
    return this.#core.kind;
  }
  get verdict(): EraVerdict {
    return this.#core.verdict;
  }
  get era(): 'modern' | 'legacy' {
    return this.#core.verdict.era;
  }
  get protocolVersion(): string {
    return this.#core.verdict.protocolVersion;
  }
  get reprobed(): boolean {
    return this.#reprobed;
  }
  get closed(): boolean {
    return this.#closed;
  }
  get sessionId(): string | undefined {
    const t = this.#core.sdkTransport;
    return this.#core.verdict.era === 'legacy' && t instanceof StreamableHTTPClientTransport ? t.sessionId : undefined;
  }
  get serverInfo(): Implementation | undefined {
    return this.#core.client.getServerVersion();
  }

  callTool(params: CallToolRequest['params'], opts: CallToolOptions = {}): Promise<McpCallResult> {
    // No async frame of its own: the call path's hops are counted per call.
    return this.#withReprobe((core) => this.#callOn(core, params, opts), opts.signal);
  }

  async relay(
    method: RelayedMethod,
    params: Record<string, unknown>,
    opts: RelayOptions = {},
  ): Promise<Record<string, unknown>> {
    return await this.#withReprobe(async (core) => {
      const options: RequestOptions = { timeout: opts.timeoutMs ?? DEFAULT_LIST_TIMEOUT_MS };
      if (opts.signal) options.signal = opts.signal;
      const modern = core.verdict.era === 'modern';
      // The SDK's envelope gives way to keys a request's `_meta` sets itself.
      const declared =
        modern && opts.onlyCapabilities !== undefined
          ? { [CLIENT_CAPABILITIES_META_KEY]: opts.onlyCapabilities }
          : undefined;
      const trace = modern ? traceMeta(this.#ctx.traceCarrier) : undefined;
      const meta = trace === undefined && declared === undefined ? undefined : { ...trace, ...declared };
      const sent = meta === undefined ? params : { ...params, _meta: meta };
      if (modern && opts.allowInputRequired === true) options.allowInputRequired = true;
      try {
        const result = (await core.client.request({ method, params: sent }, options)) as Record<string, unknown>;
        return this.#scrubbed(result);
      } catch (error) {
        throw classifyMcpError(error, opts.signal, this.#classifyContext(core));
      }
    }, opts.signal);
  }

  async listTools(opts: ListToolsOptions = {}): Promise<Tool[]> {
    return (await this.listToolsWithHints(opts)).tools;
  }

  async listToolsWithHints(opts: ListToolsOptions = {}): Promise<ToolsWithHints> {
    // Every listing is the connection's latest word on its tools; one bound to a caller's signal is not shared.
    return await this.#ctx.listed.track(
      () => this.#withReprobe(async (core) => await this.#listOn(core, opts), opts.signal),
      opts.signal === undefined,
      Date.now(),
    );
  }

  async currentTools(opts: CurrentToolsOptions): Promise<CurrentTools> {
    this.#assertOpen();
    const list = (): Promise<ToolsWithHints> =>
      this.#withReprobe(
        async (core) => await this.#listOn(core, opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
        undefined,
      );
    return await this.#ctx.listed.current((listed) => this.#freshForMs(listed, opts.maxAgeMs), list, Date.now());
  }

  markToolsChanged(): void {
    this.#ctx.listed.heard();
    try {
      this.#ctx.onToolsListChanged?.();
    } catch {
      // The owner's failure is its own.
    }
  }

  /** How long a listing of this connection stands (see {@link McpConnection.currentTools}). */
  #freshForMs(listed: ToolsWithHints, maxAgeMs: number): number {
    const core = this.#core;
    if (core.verdict.era === 'modern') return Math.min(listed.ttlMs ?? 0, maxAgeMs);
    return core.client.getServerCapabilities()?.tools?.listChanged === true ? maxAgeMs : 0;
  }

  taskTarget(): TaskWireTarget | undefined {
    const target = this.#target(this.#core);
    if (target === undefined) return undefined;
    if (target.era === 'modern') {
      return {
        era: 'modern',
        url: target.url,
        request: target.request,
        headers: target.headers,
        protocolVersion: target.protocolVersion,
        clientInfo: target.clientInfo,
        capabilities: target.capabilities,
      };
    }
    return {
      era: 'legacy',
      url: target.url,
      request: target.request,
      headers: target.headers,
      protocolVersion: target.protocolVersion ?? this.#core.verdict.protocolVersion,
      sessionId: target.sessionId,
      ...(target.serverRequest !== undefined ? { serverRequest: target.serverRequest } : {}),
    };
  }

  async close(): Promise<void> {
    this.#closing ??= this.#close();
    await this.#closing;
  }

  async #callOn(
    core: ConnectionCore,
    params: CallToolRequest['params'],
    opts: CallToolOptions,
  ): Promise<McpCallResult> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const sent = withInputResponses(params, opts, core.verdict.era);
    const target = this.#target(core);
    if (opts.logLevel !== undefined && core.verdict.era === 'legacy')
      await this.#sessionLogLevel(core, opts.logLevel, opts.signal);
    if (target !== undefined) {
      try {
        const result = (await toolCall(target, sent, {
          timeoutMs,
          ...(opts.signal ? { signal: opts.signal } : {}),
          ...(opts.tool ? { tool: opts.tool } : {}),
          ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
          ...(opts.resetTimeoutOnProgress ? { resetTimeoutOnProgress: true } : {}),
          ...(opts.onResume ? { onResume: opts.onResume } : {}),
          ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
          ...(opts.onlyCapabilities ? { onlyCapabilities: opts.onlyCapabilities } : {}),
          classify: this.#classifyContext(core),
          ...(opts.task !== undefined && target.era === 'modern' ? { tasks: true } : {}),
          ...(opts.logLevel !== undefined && target.era === 'modern' ? { logLevel: opts.logLevel } : {}),
          ...(opts.onLog !== undefined ? { onLog: opts.onLog } : {}),
        })) as McpCallResult;
        return this.#scrubbed(result);
      } catch (error) {
        throw classifyMcpError(error, undefined, this.#classifyContext(core));
      }
    }
    // Through the SDK: a legacy session on the SSE transport.
    const options: RequestOptions = { timeout: timeoutMs };
    if (opts.signal) options.signal = opts.signal;
    if (opts.onProgress || opts.resetTimeoutOnProgress) {
      options.onprogress = opts.onProgress ?? (() => {});
      options.resetTimeoutOnProgress = opts.resetTimeoutOnProgress ?? false;
    }
    try {
      return this.#scrubbed(await core.client.request({ method: 'tools/call', params: sent }, options));
    } catch (error) {
      // The SDK says nothing of whether its POST went out: what ran follows from its error's type.
      throw classifyMcpError(error, opts.signal, { ...this.#classifyContext(core), ran: callRan(error, false) });
    }
  }

  /** The log level set on each legacy session (by its core), so `logging/setLevel` goes out only on a change. */
  readonly #sessionLevels = new WeakMap<ConnectionCore, LoggingLevel>();

  /**
   * Sets a legacy session's log level when the server declares logging and the level is another
   * than the one set last. A failure does not fail the call: it runs without the server's logs.
   */
  async #sessionLogLevel(core: ConnectionCore, level: LoggingLevel, signal: AbortSignal | undefined): Promise<void> {
    if (this.#sessionLevels.get(core) === level || core.client.getServerCapabilities()?.logging === undefined) return;
    this.#sessionLevels.set(core, level);
    try {
      await core.client.setLoggingLevel(level, { timeout: 10_000, ...(signal !== undefined ? { signal } : {}) });
    } catch {
      this.#sessionLevels.delete(core);
    }
  }

  async #listOn(core: ConnectionCore, opts: ListToolsOptions): Promise<ToolsWithHints> {
    const maxPages = opts.maxPages ?? DEFAULT_MAX_PAGES;
    const options: RequestOptions = { timeout: opts.timeoutMs ?? DEFAULT_LIST_TIMEOUT_MS };
    if (opts.signal) options.signal = opts.signal;
    const meta = core.verdict.era === 'modern' ? traceMeta(this.#ctx.traceCarrier) : undefined;
    const byName = new Map<string, Tool>();
    const seenCursors = new Set<string>();
    const out: ToolsWithHints = { tools: [] };
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page += 1) {
      let result: ListToolsResult;
      const params: Record<string, unknown> = cursor === undefined ? {} : { cursor };
      if (meta !== undefined) params._meta = meta;
      try {
        // Not client.listTools(): that caches, drops tools it finds invalid (we report them) and
        // feeds the output validators we never use.
        result = await core.client.request({ method: 'tools/list', params }, options);
      } catch (error) {
        throw classifyMcpError(error, opts.signal, this.#classifyContext(core));
      }
      if (page === 0) copyHints(result, out);
      // A modern server with the tasks extension: each tool may run as a task (./tasks.ts).
      result = {
        ...result,
        tools: withTaskSupport(result.tools, core.verdict.era, core.client.getServerCapabilities()),
      };
      for (const tool of result.tools) if (!byName.has(tool.name)) byName.set(tool.name, tool);
      const next = result.nextCursor;
      if (next === undefined || seenCursors.has(next)) break;
      seenCursors.add(next);
      cursor = next;
    }
    out.tools = [...byName.values()];
    return this.#scrubbed(out);
  }

  async #listen(onToolsListChanged: () => void, opts: McpListenOptions = {}): Promise<{ close(): Promise<void> }> {
    this.#assertOpen();
    const core = this.#core;
    if (core.verdict.era !== 'modern') {
      throw new McpClientError(
        McpClientErrorCode.ProtocolError,
        'subscriptions/listen needs a modern (2026-07-28) connection',
        { transport: core.kind },
      );
    }
    if (core.client.getServerCapabilities()?.tools?.listChanged !== true) {
      throw new McpClientError(McpClientErrorCode.ProtocolError, 'the server does not advertise tools.listChanged', {
        transport: core.kind,
      });
    }
    core.client.setNotificationHandler('notifications/tools/list_changed', () => {
      this.#ctx.listed.heard();
      try {
        onToolsListChanged();
      } catch {
        // A listener's failure must not break the stream.
      }
    });
    try {
      const options: RequestOptions = {};
      if (opts.signal) options.signal = opts.signal;
      const subscription = await core.client.listen({ toolsListChanged: true }, options);
      return { close: async () => await subscription.close() };
    } catch (error) {
      throw classifyMcpError(error, opts.signal, this.#classifyContext(core));
    }
  }

  /**
   * Runs `fn` on the current core; a connection made from a caller's modern prior that the
   * server no longer honours (it refused the version, or it is a legacy server now) is probed
   * again once, and `fn` is re-run on the fresh core: the refusal proves the request did not run.
   */
  async #withReprobe<T>(fn: (core: ConnectionCore) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    this.#assertOpen();
    const core = this.#core;
    try {
      return await fn(core);
    } catch (error) {
      const reprobe = shouldReprobe({
        fromPrior: this.#ctx.fromPrior,
        reprobed: this.#reprobed,
        cancelled: signal?.aborted === true,
        era: core.verdict.era,
        stale: core.verdict.era === 'modern' && isStaleModernPrior(error),
      });
      if (!reprobe) throw error;
      const fresh = await this.#reprobe(core);
      return await fn(fresh);
    }
  }

  async #reprobe(stale: ConnectionCore): Promise<ConnectionCore> {
    this.#reprobing ??= (async () => {
      const fresh = await this.#ctx.reprobe();
      if (this.#closed) {
        await fresh.client.close().catch(() => {});
        throw new McpClientError(McpClientErrorCode.TransportError, 'MCP connection is closed', {
          transport: fresh.kind,
        });
      }
      this.#core = fresh;
      this.#reprobed = true;
      this.#watch(fresh);
      this.listen = fresh.verdict.era === 'modern' ? this.#listen.bind(this) : undefined;
      await stale.client.close().catch(() => {});
      return fresh;
    })();
    return await this.#reprobing;
  }

  #watch(core: ConnectionCore): void {
    core.client.onclose = () => {
      if (this.#core === core) this.#closed = true;
    };
  }

  async #close(): Promise<void> {
    const transport = this.#core.sdkTransport;
    if (!this.#closed && transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
      // Let the server free the session now rather than at its idle timeout.
      await withTimeout(
        transport.terminateSession().catch(() => {}),
        TERMINATE_SESSION_WAIT_MS,
      );
    }
    this.#closed = true;
    await this.#core.client.close().catch(() => {});
  }

  #modern: { core: ConnectionCore; target: ModernTarget } | undefined;
  #legacy: LegacyTarget | undefined;

  /**
   * Where the library's own `tools/call` goes: every modern connection (no session: the URL, the
   * headers and the verdict's version are all it needs), and a legacy Streamable HTTP session
   * with a session id (a request its server pushes on the call's stream, `elicitation/create`,
   * is answered on the session). `undefined`: through the SDK.
   */
  #target(core: ConnectionCore): ToolCallTarget | undefined {
    if (core.verdict.era === 'modern') {
      if (this.#modern?.core !== core) {
        const carrier = this.#ctx.traceCarrier;
        this.#modern = {
          core,
          target: {
            era: 'modern',
            url: this.#ctx.url,
            request: this.#ctx.request,
            headers: this.#ctx.headers,
            protocolVersion: core.verdict.protocolVersion,
            capabilities: this.#ctx.capabilities,
            clientInfo: this.#ctx.clientInfo,
            traceMeta: () => traceMeta(carrier),
          },
        };
      }
      return this.#modern.target;
    }
    const t = core.sdkTransport;
    if (!(t instanceof StreamableHTTPClientTransport) || t.sessionId === undefined) return undefined;
    const sessionId = t.sessionId;
    if (this.#legacy?.sessionId !== sessionId) {
      const client = core.client;
      this.#legacy = {
        era: 'legacy',
        url: this.#ctx.url,
        request: this.#ctx.request,
        headers: this.#ctx.headers,
        sessionId,
        protocolVersion: t.protocolVersion,
        cancelled: (requestId, reason) => {
          client.notification({ method: 'notifications/cancelled', params: { requestId, reason } }).catch(() => {});
        },
        ...(this.#ctx.onElicitation !== undefined || this.#ctx.onSampling !== undefined
          ? {
              serverRequest: elicitationAnswerer(this.#ctx.onElicitation, this.#ctx.capabilities, this.#ctx.onSampling),
            }
          : {}),
      };
    }
    return this.#legacy;
  }

  #assertOpen(): void {
    if (this.#closed) {
      throw new McpClientError(McpClientErrorCode.TransportError, 'MCP connection is closed', {
        transport: this.transport,
      });
    }
  }

  /**
   * A result or listing with every form of the request's secrets redacted (`./scrub.ts`): a
   * secret the connector sent never comes back through it, even when the server echoes it.
   */
  #scrubbed<T>(value: T): T {
    return scrubberOf(this.#ctx.secrets).redactJson(value);
  }

  #classifyContext(core: ConnectionCore): ClassifyContext {
    const ctx: ClassifyContext = { secrets: this.#ctx.secrets, transport: core.kind, era: core.verdict.era };
    if (core.observations.wwwAuthenticate !== undefined) ctx.wwwAuthenticate = core.observations.wwwAuthenticate;
    return ctx;
  }
}

/** The call's params with the answers to an earlier `input_required` result (`inputResponses`, `requestState`). */
function withInputResponses(
  params: CallToolRequest['params'],
  opts: CallToolOptions,
  era: 'modern' | 'legacy',
): CallToolRequest['params'] {
  // 2025-11-25 tasks: the call asks for a task with `task: {ttl}` (the modern dialect declares the extension instead).
  if (opts.task !== undefined && era === 'legacy') params = { ...params, task: { ttl: opts.task.ttlMs } };
  if (opts.inputResponses === undefined && opts.requestState === undefined) return params;
  return {
    ...params,
    ...(opts.inputResponses !== undefined ? { inputResponses: opts.inputResponses } : {}),
    ...(opts.requestState !== undefined ? { requestState: opts.requestState } : {}),
  };
}

/** The first page's 2026-07-28 cache hints, when they are well-formed. */
function copyHints(result: ListToolsResult, out: ToolsWithHints): void {
  const hints = result as { ttlMs?: unknown; cacheScope?: unknown };
  if (typeof hints.ttlMs === 'number' && Number.isFinite(hints.ttlMs) && hints.ttlMs >= 0) out.ttlMs = hints.ttlMs;
  if (hints.cacheScope === 'public' || hints.cacheScope === 'private') out.cacheScope = hints.cacheScope;
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
