import {
  Client,
  SdkHttpError,
  type ClientCapabilities,
  type PriorDiscovery,
  type Transport,
} from '@modelcontextprotocol/client';
import type { ElicitationHandler, SamplingHandler } from './elicitation.js';
import { fetchAsRequest, type McpHttpRequest } from './http-request.js';
import { discoverFault, isEraVerdict, type EraVerdict } from './era-verdict.js';
import { requestSecrets, scrubberOf } from './scrub.js';
import {
  isEraFailure,
  McpClientError,
  McpClientErrorCode,
  redactUrl,
  rpcErrorCodeOf,
  UNSUPPORTED_PROTOCOL_VERSION,
} from './errors.js';
import { connectError } from './connect-error.js';
import { assertNoModernClaim, verdictOf } from './connect-verdict.js';
import { trackedFetch, type FetchObservations } from './tracked-fetch.js';
import { Connection } from './connection.js';
import type { ConnectionCore } from './connection-core.js';
import type { McpConnection, McpTransportKind } from './mcp-connection.js';
import { ListedTools } from './listed-tools.js';
import { StreamEndAwareTransport } from './stream-end-transport.js';
import { HeaderedSseTransport } from './sse-transport.js';
import { SessionStream } from './session-stream.js';

export type { ElicitationHandler, SamplingHandler } from './elicitation.js';

export interface ConnectMcpOptions {
  url: string;
  /**
   * Pin a transport. Unset: Streamable HTTP (either era), then legacy SSE only if that failed
   * with an HTTP 4xx (not 401/403).
   */
  transport?: McpTransportKind;
  /** Static request headers (e.g. `Authorization`); their values never appear in errors. */
  headers?: Record<string, string>;
  /** Default `{name: 'mcp-connector', version: '0.1.0'}`. */
  clientInfo?: { name: string; version: string };
  /** Bound on the whole connect, fallback and re-probe included. Default 30 s. */
  connectTimeoutMs?: number;
  /** What the SDK client sends with (the connect, listing, `listen`, a legacy session's own requests). */
  fetch?: typeof fetch;
  /**
   * What the library's own `tools/call` path sends with, both eras (e.g. `@mcpx/outbound`'s
   * `request`). Unset: the connection's `fetch`, adapted.
   */
  request?: McpHttpRequest;
  /** Aborts the connect (not the connection once established). */
  signal?: AbortSignal;
  /**
   * Called on a legacy server's `notifications/tools/list_changed`, and on `markToolsChanged()`;
   * re-list with `listTools()`. Modern: see `listen`.
   */
  onToolsListChanged?: () => void;
  /**
   * The server's cached era verdict (from an earlier connection's `verdict`, of the same auth
   * context only): modern connects with zero round trips, legacy goes straight to `initialize`
   * on the recorded transport. One that no longer holds is probed again once (`reprobed`).
   */
  prior?: EraVerdict;
  /**
   * Capabilities declared in every request's `_meta` (default none). A server asks for input
   * (`input_required`) only within what is declared; such results are returned, never answered here.
   */
  capabilities?: ClientCapabilities;
  /**
   * Answers a legacy (2025-11-25) server's `elicitation/create`, pushed on the session while a
   * request runs (on the call's own response stream, or on the session's GET stream). When set,
   * the connection declares the elicitation capability (form mode, with SEP-1034
   * `applyDefaults`: an accepted answer's missing fields get the requested schema's defaults),
   * and the answer is sent back on the session. Unset: nothing is declared, and a server cannot ask. Modern servers ask with
   * `input_required` results instead (see `inputRequestOf`).
   */
  onElicitation?: ElicitationHandler;
  /**
   * Answers a legacy (2025-11-25) server's `sampling/createMessage`, pushed on the session while
   * a request runs, like `onElicitation`. When set, the connection declares the sampling
   * capability (unless `capabilities` names it already). Unset: such a request is refused (-32601).
   */
  onSampling?: SamplingHandler;
  /**
   * The active trace context as W3C carrier fields (`traceparent`, `tracestate`), read per
   * request: a modern request carries them in `_meta`.
   */
  traceCarrier?: () => Record<string, string>;
}

const DEFAULT_CLIENT_INFO = { name: 'mcp-connector', version: '0.1.0' };
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/**
 * Connects to a remote MCP server of either era. Without a prior: `server/discover` then, for a
 * legacy server, `initialize` (SDK v2, mode auto), and legacy SSE on a 4xx when no transport is
 * pinned. Throws {@link McpClientError}: `connect_failed`, `unauthorized`, `timeout` (connect
 * deadline), `cancelled` (`signal`) or `era_negotiation_failed` (the server's era cannot be
 * trusted). When both transports fail, the Streamable HTTP error is thrown (`details.fallbackError`
 * has the other).
 */
export async function connectMcp(given: ConnectMcpOptions): Promise<McpConnection> {
  const url = parseServerUrl(given.url);
  const opts = withScrubbedQuestions(given, requestSecrets(url, given.headers));
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const deadline = connectDeadline(timeoutMs, opts.signal);
  const listed = new ListedTools();
  const run = { url, opts, deadline, timeoutMs, listed };
  const fetchFn = opts.fetch ?? globalThis.fetch;
  const context = {
    secrets: opts.secrets,
    url,
    request: opts.request ?? fetchAsRequest(fetchFn),
    headers: { ...opts.headers },
    capabilities: capabilitiesOf(opts),
    clientInfo: opts.clientInfo ?? DEFAULT_CLIENT_INFO,
    onElicitation: opts.onElicitation,
    onSampling: opts.onSampling,
    traceCarrier: opts.traceCarrier,
    listed,
    onToolsListChanged: opts.onToolsListChanged,
  };
  try {
    const prior = opts.prior !== undefined && usablePrior(opts.prior, opts.transport) ? opts.prior : undefined;
    if (prior !== undefined) {
      try {
        const core = await connectWith(prior.era === 'modern' ? 'http' : prior.transport, run, priorOf(prior));
        // A modern prior is adopted without a round trip: a stale one shows on the first request.
        return new Connection(core, { ...context, fromPrior: true, reprobe: () => probeFresh(run) }, false);
      } catch (error) {
        if (!isStalePrior(error)) throw error;
      }
      return new Connection(await probe(run), { ...context, fromPrior: false, reprobe: () => probeFresh(run) }, true);
    }
    // A prior that is not a verdict at all (a corrupt store) is probed again, and says so.
    const reprobed = opts.prior !== undefined;
    return new Connection(await probe(run), { ...context, fromPrior: false, reprobe: () => probeFresh(run) }, reprobed);
  } finally {
    deadline.dispose();
  }
}

/** The declared capabilities: the caller's, elicitation (form, SEP-1034 defaults) and sampling when a handler is given. */
function capabilitiesOf(opts: ConnectMcpOptions): ClientCapabilities {
  let caps = opts.capabilities ?? {};
  if (opts.onElicitation !== undefined && caps.elicitation === undefined)
    caps = { ...caps, elicitation: { form: { applyDefaults: true } } };
  if (opts.onSampling !== undefined && caps.sampling === undefined) caps = { ...caps, sampling: {} };
  return caps;
}

interface ConnectRun {
  url: URL;
  opts: ConnectMcpOptions;
  deadline: Deadline;
  timeoutMs: number;
  /** The connection's listings: every core it connects (a re-probe's too) reports list changes here. */
  listed: ListedTools;
}

/** A prior this connect can use: a verdict whose transport agrees with a pinned one, and a sound discover result. */
function usablePrior(prior: EraVerdict, pinned: McpTransportKind | undefined): boolean {
  if (!isEraVerdict(prior)) return false;
  if (prior.era === 'modern')
    return (pinned === undefined || pinned === 'http') && discoverFault(prior.discover) === undefined;
  return pinned === undefined || pinned === prior.transport;
}

function priorOf(verdict: EraVerdict): PriorDiscovery {
  return verdict.era === 'modern' ? { kind: 'modern', discover: verdict.discover } : { kind: 'legacy' };
}

/**
 * Whether a connect from a prior failed because the prior no longer holds: the SDK refused it
 * (`EraNegotiationFailed`), the server refused the version (-32022), or a legacy verdict met a
 * server that refuses `initialize` now (it moved to the modern era: HTTP 400 whose JSON-RPC error
 * is -32022, read from the body's code, not its text).
 */
function isStalePrior(err: unknown): boolean {
  if (!(err instanceof McpClientError)) return false;
  if (err.code === McpClientErrorCode.EraNegotiationFailed) return true;
  const cause = err.cause;
  if (isEraFailure(cause)) return true;
  return (
    cause instanceof SdkHttpError && cause.status === 400 && rpcErrorCodeOf(cause) === UNSUPPORTED_PROTOCOL_VERSION
  );
}

/** A connect with no prior, within the caller's deadline: Streamable HTTP (mode auto), then SSE. */
async function probe(run: ConnectRun): Promise<ConnectionCore> {
  const attempt = (kind: McpTransportKind): Promise<ConnectionCore> => connectWith(kind, run, undefined);
  if (run.opts.transport !== undefined) return await attempt(run.opts.transport);
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
}

/** The re-probe of an established connection whose prior went stale: a fresh deadline of the same length. */
async function probeFresh(run: ConnectRun): Promise<ConnectionCore> {
  const deadline = connectDeadline(run.timeoutMs, undefined);
  const { signal: _connectSignal, ...opts } = run.opts;
  try {
    return await probe({ ...run, opts, deadline });
  } finally {
    deadline.dispose();
  }
}

/** The spec's backwards-compatibility rule: fall back on a 4xx, never on 401/403, 5xx or the network. */
function shouldFallBack(err: unknown): err is McpClientError {
  return (
    err instanceof McpClientError &&
    err.code === McpClientErrorCode.ConnectFailed &&
    err.status !== undefined &&
    err.status >= 400 &&
    err.status < 500 &&
    err.status !== 403
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

/**
 * The options with the request's secrets (`requestSecrets`) and handlers that see a server's
 * pushed question (`elicitation/create`, `sampling/createMessage`) with every form of those
 * secrets redacted: its text goes to a person or a runtime, never back to the server.
 */
function withScrubbedQuestions(opts: ConnectMcpOptions, secrets: string[]): ConnectMcpOptions & { secrets: string[] } {
  const scrubber = scrubberOf(secrets);
  const { onElicitation, onSampling } = opts;
  return {
    ...opts,
    secrets,
    ...(onElicitation !== undefined
      ? { onElicitation: (params, ctx) => onElicitation(scrubber.redactJson(params), ctx) }
      : {}),
    ...(onSampling !== undefined ? { onSampling: (params, ctx) => onSampling(scrubber.redactJson(params), ctx) } : {}),
  };
}

/**
 * One SDK client on one transport: mode auto on Streamable HTTP (the SDK probes, or adopts
 * `prior`), the plain legacy handshake on SSE (a 2025-era transport).
 */
async function connectWith(
  kind: McpTransportKind,
  run: ConnectRun,
  prior: PriorDiscovery | undefined,
): Promise<ConnectionCore> {
  const { url, opts, deadline, timeoutMs } = run;
  const observations: FetchObservations = {};
  // A stream that opens or ends makes what was listed before stale: changes may have gone unheard.
  const sessionStream = kind === 'http' ? new SessionStream(() => run.listed.streamChanged()) : undefined;
  const fetchFn = trackedFetch(opts.fetch ?? globalThis.fetch, observations, sessionStream);
  const requestInit: RequestInit = { headers: { ...opts.headers } };
  const http = kind === 'http' ? new StreamEndAwareTransport(url, { requestInit, fetch: fetchFn }) : undefined;
  const transport: Transport = http ?? new HeaderedSseTransport(url, { requestInit, fetch: fetchFn });
  const client = new Client(opts.clientInfo ?? DEFAULT_CLIENT_INFO, {
    capabilities: capabilitiesOf(opts),
    versionNegotiation: { mode: kind === 'http' ? 'auto' : 'legacy' },
    // input_required results go back to the caller: nothing here answers for the user.
    inputRequired: { autoFulfill: false },
  });
  // Transport hiccups (a dropped GET stream the SDK reconnects) surface on the failing request.
  client.onerror = () => {};
  const onElicitation = opts.onElicitation;
  if (onElicitation) {
    client.setRequestHandler(
      'elicitation/create',
      async (request, ctx) => await onElicitation(request.params, { signal: ctx.mcpReq.signal }),
    );
  }
  const onSampling = opts.onSampling;
  if (onSampling) {
    client.setRequestHandler(
      'sampling/createMessage',
      async (request, ctx) => await onSampling(request.params, { signal: ctx.mcpReq.signal }),
    );
  }
  // Heard by the connection (its listing is stale), then by the caller.
  const onToolsListChanged = opts.onToolsListChanged;
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    run.listed.heard();
    try {
      onToolsListChanged?.();
    } catch {
      // A listener's failure must not break the connection.
    }
  });
  const secrets = requestSecrets(url, opts.headers);
  const where = `MCP connect to ${redactUrl(url)} (${kind === 'http' ? 'Streamable HTTP' : 'SSE'})`;
  let verdict: EraVerdict;
  try {
    if (deadline.signal.aborted) throw deadline.signal.reason;
    // The deadline's own timer decides: the SDK's request timeout is set a little later, so a
    // connect that runs out of time is always reported as our timeout.
    const options = { timeout: deadline.remainingMs() + 1_000, signal: deadline.signal, ...(prior ? { prior } : {}) };
    await raceAbort(client.connect(transport, options), deadline.signal);
    verdict = verdictOf(client, kind, where);
    if (verdict.era === 'legacy') await assertNoModernClaim(observations, where);
    if (verdict.era === 'modern') http?.markModern();
  } catch (error) {
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
    // A probe answered with an unreadable result is the reason, whatever the fallback then met.
    if (!(error instanceof McpClientError)) await assertNoModernClaim(observations, where);
    throw await connectError(error, {
      kind,
      url,
      signal: opts.signal,
      deadline: deadline.signal,
      timeoutMs,
      observations,
      secrets,
    });
  }
  return { client, kind, sdkTransport: transport, verdict, observations, ...(sessionStream ? { sessionStream } : {}) };
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
