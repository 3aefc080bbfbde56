/**
 * The established connection (`McpConnection`): the pass-through call path, relayed requests,
 * paged listing, the re-probe of a stale prior, and an idempotent close.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  StreamableHTTPClientTransport,
  type CallToolRequest,
  type Client,
  type Implementation,
  type LoggingLevel,
  type RequestOptions,
  type Tool,
} from '@modelcontextprotocol/client';
import { shouldReprobe, type EraVerdict } from './era-verdict.js';
import { scrubberOf } from './scrub.js';
import { McpClientError, McpClientErrorCode } from './errors.js';
import { callRan, classifyMcpError, isStaleModernPrior, type ClassifyContext } from './classify.js';
import {
  CallTargets,
  classifyContextOf,
  taskTargetOf,
  withInputResponses,
  type ConnectionContext,
  type ConnectionCore,
} from './connection-core.js';
import { DEFAULT_LIST_TIMEOUT_MS, listToolPages } from './list-pages.js';
import type {
  CallToolOptions,
  CurrentTools,
  CurrentToolsOptions,
  ListToolsOptions,
  McpCallResult,
  McpConnection,
  McpListenOptions,
  McpTransportKind,
  RelayedMethod,
  RelayOptions,
  ToolsWithHints,
} from './mcp-connection.js';
import type { TaskWireTarget } from './tasks.js';
import { toolCall } from './tool-call.js';
import { traceMeta } from './call-request.js';

const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const TERMINATE_SESSION_WAIT_MS = 2_000;

/** An established connection: the pass-through call path, paged listing, and an idempotent close. */
export class Connection implements McpConnection {
  #closed = false;
  #closing: Promise<void> | undefined;
  #core: ConnectionCore;
  #reprobed: boolean;
  #reprobing: Promise<ConnectionCore> | undefined;
  readonly #ctx: ConnectionContext;
  readonly #targets: CallTargets;

  constructor(core: ConnectionCore, ctx: ConnectionContext, reprobed: boolean) {
    this.#core = core;
    this.#ctx = ctx;
    this.#targets = new CallTargets(ctx);
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
    return this.#withReprobe((core) => this.#callOn(core, params, opts), opts.signal ?? opts.controller?.signal);
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
      const trace = traceMeta(this.#ctx.traceCarrier, opts.trace);
      // A modern request carries the trace context in its `_meta`; a legacy one in its HTTP headers.
      if (!modern && trace !== undefined) options.headers = trace;
      const meta = modern && (trace !== undefined || declared !== undefined) ? { ...trace, ...declared } : undefined;
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
      this.#withReprobe(async (core) => await this.#listOn(core, opts), undefined);
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
    // A legacy server's word that it announces changes holds only while they can reach us.
    const hearing = core.sessionStream?.open ?? true;
    return hearing && core.client.getServerCapabilities()?.tools?.listChanged === true ? maxAgeMs : 0;
  }

  taskTarget(): TaskWireTarget | undefined {
    const target = this.#targets.of(this.#core);
    return target === undefined ? undefined : taskTargetOf(target, this.#core.verdict);
  }

  async close(opts: { keepSession?: boolean } = {}): Promise<void> {
    this.#closing ??= this.#close(opts.keepSession === true);
    await this.#closing;
  }

  async #callOn(
    core: ConnectionCore,
    params: CallToolRequest['params'],
    opts: CallToolOptions,
  ): Promise<McpCallResult> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const sent = withInputResponses(params, opts, core.verdict.era);
    const target = this.#targets.of(core);
    const signal = opts.signal ?? opts.controller?.signal;
    if (opts.logLevel !== undefined && core.verdict.era === 'legacy')
      await this.#sessionLogLevel(core, opts.logLevel, signal, opts.trace);
    if (target !== undefined) {
      try {
        const result = (await toolCall(target, sent, {
          timeoutMs,
          ...(opts.controller ? { controller: opts.controller } : opts.signal ? { signal: opts.signal } : {}),
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
          ...(opts.trace !== undefined ? { trace: opts.trace } : {}),
        })) as McpCallResult;
        return this.#scrubbed(result);
      } catch (error) {
        throw classifyMcpError(error, undefined, this.#classifyContext(core));
      }
    }
    // Through the SDK: a legacy session on the SSE transport.
    const options: RequestOptions = { timeout: timeoutMs };
    if (signal) options.signal = signal;
    // The caller's trace context, in the POST's headers (./sse-transport.ts).
    const trace = opts.trace === undefined ? undefined : traceMeta(undefined, opts.trace);
    if (trace !== undefined) options.headers = trace;
    if (opts.onProgress || opts.resetTimeoutOnProgress) {
      options.onprogress = opts.onProgress ?? (() => {});
      options.resetTimeoutOnProgress = opts.resetTimeoutOnProgress ?? false;
    }
    try {
      return this.#scrubbed(await core.client.request({ method: 'tools/call', params: sent }, options));
    } catch (error) {
      // The SDK says nothing of whether its POST went out: what ran follows from its error's type
      // (a session stream that ended lost the answer: ./sse-transport.ts).
      throw classifyMcpError(error, signal, { ...this.#classifyContext(core), ran: callRan(error, false) });
    }
  }

  /** The log level set on each legacy session (by its core), so `logging/setLevel` goes out only on a change. */
  readonly #sessionLevels = new WeakMap<ConnectionCore, LoggingLevel>();

  /**
   * Sets a legacy session's log level when the server declares logging and the level is another
   * than the one set last. A failure does not fail the call: it runs without the server's logs.
   */
  async #sessionLogLevel(
    core: ConnectionCore,
    level: LoggingLevel,
    signal: AbortSignal | undefined,
    trace: Record<string, string> | undefined,
  ): Promise<void> {
    if (this.#sessionLevels.get(core) === level || core.client.getServerCapabilities()?.logging === undefined) return;
    this.#sessionLevels.set(core, level);
    const headers = trace === undefined ? undefined : traceMeta(undefined, trace);
    try {
      await core.client.setLoggingLevel(level, {
        timeout: 10_000,
        ...(signal !== undefined ? { signal } : {}),
        ...(headers !== undefined ? { headers } : {}),
      });
    } catch {
      this.#sessionLevels.delete(core);
    }
  }

  async #listOn(core: ConnectionCore, opts: ListToolsOptions): Promise<ToolsWithHints> {
    const trace = traceMeta(this.#ctx.traceCarrier, opts.trace);
    return this.#scrubbed(await listToolPages(core, opts, trace, this.#classifyContext(core)));
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

  async #close(keepSession: boolean): Promise<void> {
    const transport = this.#core.sdkTransport;
    if (
      !keepSession &&
      !this.#closed &&
      transport instanceof StreamableHTTPClientTransport &&
      transport.sessionId !== undefined
    ) {
      // Let the server free the session now rather than at its idle timeout.
      await withTimeout(
        transport.terminateSession().catch(() => {}),
        TERMINATE_SESSION_WAIT_MS,
      );
    }
    this.#closed = true;
    await this.#core.client.close().catch(() => {});
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
    return classifyContextOf(core, this.#ctx.secrets);
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
