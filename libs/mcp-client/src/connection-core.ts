/**
 * What a connection runs on: the established SDK client and its verdict (`ConnectionCore`), the
 * connect's context, and where the library's own `tools/call` goes on a given core (`CallTargets`).
 */
import {
  StreamableHTTPClientTransport,
  type CallToolRequest,
  type Client,
  type ClientCapabilities,
  type Implementation,
  type Transport,
} from '@modelcontextprotocol/client';
import type { EraVerdict } from './era-verdict.js';
import type { ClassifyContext } from './classify.js';
import type { McpHttpRequest } from './http-request.js';
import { elicitationAnswerer, type ElicitationHandler, type SamplingHandler } from './elicitation.js';
import type { CallToolOptions, McpTransportKind } from './mcp-connection.js';
import type { TaskWireTarget } from './tasks.js';
import { traceMeta } from './call-request.js';
import { HeaderedSseTransport, sseStreamFailure } from './sse-transport.js';
import { type LegacyTarget, type ModernTarget, type ToolCallTarget } from './call-target.js';
import type { FetchObservations } from './tracked-fetch.js';
import type { ListedTools } from './listed-tools.js';
import type { SessionStream } from './session-stream.js';

/** One established SDK client on one transport, and the verdict it ran on. */
export interface ConnectionCore {
  client: Client;
  kind: McpTransportKind;
  sdkTransport: Transport;
  verdict: EraVerdict;
  observations: FetchObservations;
  /**
   * Streamable HTTP: whether the legacy session's GET event stream is open (its server's
   * notifications reach the connection only on it). Unset on SSE, whose stream is the connection.
   */
  sessionStream?: SessionStream;
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

/** The error classifier's context for a failure on `core`. */
export function classifyContextOf(core: ConnectionCore, secrets: readonly string[]): ClassifyContext {
  const ctx: ClassifyContext = { secrets, transport: core.kind, era: core.verdict.era };
  // A legacy SSE session whose event stream ended fails its waiting requests (./sse-transport.ts).
  if (core.sdkTransport instanceof HeaderedSseTransport)
    ctx.transportFailure = (err) => sseStreamFailure(core.sdkTransport, err, secrets);
  if (core.observations.wwwAuthenticate !== undefined) ctx.wwwAuthenticate = core.observations.wwwAuthenticate;
  return ctx;
}

/**
 * Where the library's own `tools/call` goes: every modern connection (no session: the URL, the
 * headers and the verdict's version are all it needs), and a legacy Streamable HTTP session
 * with a session id (a request its server pushes on the call's stream, `elicitation/create`,
 * is answered on the session). `undefined`: through the SDK. The target is kept while its core
 * (modern) or its session (legacy) stays the same.
 */
export class CallTargets {
  #modern: { core: ConnectionCore; target: ModernTarget } | undefined;
  #legacy: LegacyTarget | undefined;
  readonly #ctx: ConnectionContext;

  constructor(ctx: ConnectionContext) {
    this.#ctx = ctx;
  }

  of(core: ConnectionCore): ToolCallTarget | undefined {
    if (core.verdict.era === 'modern') {
      if (this.#modern?.core !== core) this.#modern = { core, target: this.#modernTarget(core) };
      return this.#modern.target;
    }
    const t = core.sdkTransport;
    if (!(t instanceof StreamableHTTPClientTransport) || t.sessionId === undefined) return undefined;
    if (this.#legacy?.sessionId !== t.sessionId) this.#legacy = this.#legacyTarget(core.client, t, t.sessionId);
    return this.#legacy;
  }

  #modernTarget(core: ConnectionCore): ModernTarget {
    const carrier = this.#ctx.traceCarrier;
    return {
      era: 'modern',
      url: this.#ctx.url,
      request: this.#ctx.request,
      headers: this.#ctx.headers,
      protocolVersion: core.verdict.protocolVersion,
      capabilities: this.#ctx.capabilities,
      clientInfo: this.#ctx.clientInfo,
      traceMeta: () => traceMeta(carrier),
    };
  }

  #legacyTarget(client: Client, t: StreamableHTTPClientTransport, sessionId: string): LegacyTarget {
    const ctx = this.#ctx;
    return {
      era: 'legacy',
      url: ctx.url,
      request: ctx.request,
      headers: ctx.headers,
      sessionId,
      protocolVersion: t.protocolVersion,
      cancelled: (requestId, reason) => {
        client.notification({ method: 'notifications/cancelled', params: { requestId, reason } }).catch(() => {});
      },
      ...(ctx.onElicitation !== undefined || ctx.onSampling !== undefined
        ? { serverRequest: elicitationAnswerer(ctx.onElicitation, ctx.capabilities, ctx.onSampling) }
        : {}),
    };
  }
}

/** A call target as the tasks path needs it (`./tasks.ts`). */
export function taskTargetOf(target: ToolCallTarget, verdict: EraVerdict): TaskWireTarget {
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
    protocolVersion: target.protocolVersion ?? verdict.protocolVersion,
    sessionId: target.sessionId,
    ...(target.serverRequest !== undefined ? { serverRequest: target.serverRequest } : {}),
  };
}

/** The call's params with the answers to an earlier `input_required` result (`inputResponses`, `requestState`). */
export function withInputResponses(
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
